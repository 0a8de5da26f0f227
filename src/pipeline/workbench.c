/* What agents work with, for a run and a session; see workbench.h. */
#include <string.h>

#include "agents/roles.h"
#include "base/err.h"
#include "base/fsutil.h"
#include "pipeline/workbench.h"
#include "tools/repo_map.h"

void workbench_init(struct workbench *wb)
{
	memset(wb, 0, sizeof(*wb));
	wb->st = (struct shell_tools)SHELL_TOOLS_INIT;
	registry_init(&wb->reg);
	mcp_set_init(&wb->mcp);
}

int workbench_open(struct workbench *wb, const struct workbench_opts *o)
{
	const struct config *cfg = o->cfg;
	size_t i;
	int ret;

	ret = executor_init(&wb->ex, cfg, cfg->workspace);
	if (ret < 0)
		return err_prefix(ret, "sandbox");
	wb->have_ex = 1;
	executor_set_cancel(&wb->ex, -1, o->cancel);
	wb->ex.approver = o->approver;
	wb->ex.on_event = recorder_agent_event;	/* the egress proxy's "network" events */
	wb->ex.event_data = o->recorder;
	wb->mcp.approver = o->approver;
	wb->st.executor = &wb->ex;
	wb->st.test_command = &cfg->pipeline.test_command;
	wb->st.test_command_untrusted = config_from_untrusted_project(cfg, "pipeline.test_command");
	wb->rec = o->recorder;
	wb->cfg = cfg;
	wb->st.on_command = recorder_command;
	wb->st.data = o->recorder;
	if ((ret = tools_register_builtin(&wb->reg)) < 0 ||
	    (ret = tools_register_shell(&wb->reg, &wb->st)) < 0 ||
	    (ret = roles_register_tools(&wb->reg)) < 0)
		return ret;
	if (cfg->mcp_servers_nr) {
		mcp_set_start(&wb->mcp, cfg, o->log_dir, NULL, o->cancel);
		for (i = 0; i < wb->mcp.servers.nr; i++)
			recorder_event(o->recorder, "mcp_server", mcp_servers_json(&wb->mcp.servers, i));
		ret = tools_register_mcp(&wb->reg, &wb->mcp);
		if (ret < 0)
			return ret;
	}
	ret = tool_ctx_init(&wb->tctx, &wb->reg, cfg->workspace);
	if (ret < 0)
		return ret;
	wb->have_tctx = 1;
	wb->tctx.hooks = &o->recorder->hooks;
	hooks_init(&wb->uhooks, cfg, &wb->ex, o->id, recorder_hook, o->recorder);
	hooks_tool_hooks(&wb->tctx.user_hooks, &wb->uhooks);
	ret = ctx_session_init(&wb->ctx, cfg->workspace, &wb->ex,
			       cfg->context.map_tokens > 0 ? (size_t)cfg->context.map_tokens : 1024);
	if (ret < 0)
		return ret;
	wb->have_ctx = 1;
	wb->ctx.changed = &wb->tctx.changed;
	o->recorder->map = &wb->ctx;
	if (executor_init(&wb->map_ex, cfg, cfg->workspace) == 0) {
		executor_set_cancel(&wb->map_ex, -1, o->cancel);
		wb->map_ex.approver = o->approver;
		wb->map_ex.workspace_read_only = 1;	/* only ctags: it only reads */
		wb->have_map_ex = 1;
		wb->ctx.idx.ex2 = &wb->map_ex;
	}
	err_clear();
	return tools_register_repo_map(&wb->reg, &wb->ctx);
}

void workbench_instructions(struct workbench *wb, struct buf *out)
{
	size_t i;

	for (i = 0; i < wb->cfg->context.instructions.nr; i++) {
		const char *name = wb->cfg->context.instructions.v[i];
		struct buf c = BUF_INIT;
		int ret, cut;

		/* beneath the workspace, no link followed: AGENTS.md -> ~/.ssh/id_ed25519 is refused */
		ret = fsutil_read_beneath(&c, wb->cfg->workspace, name, 32u << 10, &cut);
		if (!ret && c.len)
			buf_addf(out, "## %s\n\n%s\n%s", name, c.buf,
				 cut ? "[... the rest of this file was left out ...]\n" : "");
		else if (ret < 0 && ret != FX_ENOTFOUND && !wb->instructions_warned)
			recorder_event(wb->rec, "warning", json_pack("{s:s, s:s}", "message",
								     err_last(), "file", name));
		if (ret < 0 && ret != FX_ENOTFOUND)
			wb->instructions_warned = 1;
		err_clear();
		buf_release(&c);
	}
}

void workbench_map(struct workbench *wb, struct buf *out, const char *request,
		   const struct strvec *files)
{
	struct buf map = BUF_INIT;

	if (!wb->have_ctx || wb->cfg->context.map_tokens <= 0)
		return;
	ctx_session_set_request(&wb->ctx, request);
	if (ctx_session_map(&wb->ctx, &map, NULL, files, (size_t)wb->cfg->context.map_tokens) < 0)
		err_clear();
	if (map.len)
		buf_addf(out, "## Repository map\n\n(repo_map shows another, centred on the paths or "
			 "names you give it.)\n\n%s", map.buf);
	buf_release(&map);
}

void workbench_release(struct workbench *wb)
{
	if (wb->rec)
		wb->rec->map = NULL;	/* released here */
	if (wb->have_ctx)
		ctx_session_release(&wb->ctx);
	if (wb->have_map_ex)
		executor_release(&wb->map_ex);
	if (wb->have_tctx)
		tool_ctx_release(&wb->tctx);
	registry_release(&wb->reg);
	mcp_set_release(&wb->mcp);
	shell_tools_release(&wb->st);
	if (wb->have_ex)
		executor_release(&wb->ex);
	workbench_init(wb);
}
