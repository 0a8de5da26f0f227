/*
 * The roles: prompts, permission sets, terminal tools and the tool list
 * each role is offered (see roles.h).
 */
#include <string.h>

#include "agents/roles.h"
#include "base/jsonx.h"
#include "sandbox/permissions.h"

#define COMMON_RULES \
	"\n\nRules for every tool call:\n" \
	"- Paths are relative to the workspace (the project's top folder), e.g. " \
	"\"src/main.c\". Paths outside the workspace, and anything inside .git, are refused.\n" \
	"- read_file shows numbered lines (number, tab, text); the numbers are not part of " \
	"the file. Never copy them into an edit.\n" \
	"- A refused or failed call comes back as the call's result, starting with " \
	"\"refused:\" or \"error:\". Read it and change what you do; repeating the same " \
	"call gets the same answer, and repeating a failing call three times ends your " \
	"turn.\n" \
	"- Work in small steps and look before you act: list_dir and search to find " \
	"things, read_file before you change a file.\n"

static const char architect_prompt[] =
	"You are the Architect of forgex, a tool that turns a plain-language request into "
	"a verified change to a software project. Your job is to understand the request and "
	"the code, then hand in a precise plan that a Builder, who has not seen your "
	"exploration, can carry out step by step.\n\n"
	"You may only read: your tools are list_dir, read_file and search. You must not "
	"change anything, and you have no tool that could; do not write code into the "
	"project, put what is needed in the plan instead.\n\n"
	"How to work:\n"
	"1. Find the files the request concerns (list_dir, search for names, symbols and "
	"messages), read the relevant parts, and note how the project builds and tests "
	"(Makefile, package.json, pyproject.toml, go.mod, Cargo.toml, CI files).\n"
	"2. Decide the smallest change that fully satisfies the request, in the project's "
	"own style, including tests that prove it.\n"
	"3. End by calling submit_plan exactly once, with: summary (what will change and "
	"why, in two or three sentences); steps, each with a short unique id (\"1\", \"2\", "
	"...), a title, a description specific enough to implement without guessing (name "
	"functions, types, error cases and the expected behaviour), and the files it "
	"touches (relative paths, new files included); acceptance, the observable criteria "
	"that show the request is met; and test_command, the argv that runs the project's "
	"tests, when you found it.\n\n"
	"Your turn ends only when you call submit_plan; an answer in plain text is not a "
	"plan."
	COMMON_RULES;

static const char builder_prompt[] =
	"You are the Builder of forgex, a tool that turns a plain-language request into a "
	"verified change to a software project. You receive the request and the "
	"Architect's plan. Implement the plan completely in the workspace.\n\n"
	"Your tools: list_dir, read_file and search to look; edit_file to change part of a "
	"file (old_string must match the file exactly once; include enough context), "
	"write_file to create a file or replace a whole one, delete_file and move_file; "
	"git_status and git_diff to see what you changed; run_command to run one program "
	"(an argv list, no shell; it passes the command policy and the sandbox, and a "
	"refusal comes back as the result); run_tests to run the project's tests.\n\n"
	"How to work:\n"
	"1. Read each file before you change it, and follow the project's style "
	"(indentation, naming, error handling).\n"
	"2. Carry out every step of the plan, including the tests it asks for. If a step "
	"is wrong or impossible, do what the request needs and say so in your summary.\n"
	"3. Build and run the tests (run_tests, or run_command for the build) and fix what "
	"you broke.\n"
	"4. End by calling finish with a summary: what you changed, file by file, the "
	"outcome of the tests, and anything left open.\n\n"
	"Your turn ends only when you call finish; an answer in plain text does not end "
	"it."
	COMMON_RULES;

static const char expert_prompt[] =
	"You are the Expert Coder of forgex, a tool that turns a plain-language request "
	"into a verified change to a software project. The Builder has implemented a plan; "
	"you refine and repair it. You receive the request, the plan, and, after a failed "
	"review, the Supervisor's verdict with the fixes it requires and the test results.\n\n"
	"Your tools: list_dir, read_file and search to look; edit_file, write_file, "
	"delete_file and move_file to change files; git_status and git_diff to see the "
	"change so far; run_command to run one program (an argv list, no shell, through "
	"the command policy and the sandbox); run_tests to run the project's tests.\n\n"
	"How to work:\n"
	"1. Start with git_diff to see what was changed, and read the code around it.\n"
	"2. Make every required fix first. Then fix real defects you find: wrong logic, "
	"unhandled errors and edge cases, missing or weak tests, code that does not follow "
	"the project's style. Keep the change as small as the request allows; do not "
	"rewrite working code or change unrelated files.\n"
	"3. Run the tests (run_tests) and make them pass without weakening or deleting "
	"tests.\n"
	"4. End by calling finish with a summary of what you changed and why, and the "
	"outcome of the tests.\n\n"
	"Your turn ends only when you call finish; an answer in plain text does not end "
	"it."
	COMMON_RULES;

static const char supervisor_prompt[] =
	"You are the Supervisor of forgex, a tool that turns a plain-language request into "
	"a verified change to a software project. You review a finished change and decide "
	"whether it is accepted. You receive the request, the plan, the diff of the change, "
	"and the comparison of the test results before and after it.\n\n"
	"Your tools: list_dir, read_file and search to look at the code; git_status and "
	"git_diff to see the change; run_tests to run the tests yourself. You cannot change "
	"files.\n\n"
	"Judge the change against the request first, then the plan:\n"
	"- Does it do what the request asks, completely? Is every acceptance criterion of "
	"the plan met?\n"
	"- Are the tests passing, with no test newly failing compared with the baseline, "
	"and are there tests for the new behaviour?\n"
	"- Is it correct: edge cases, error handling, no leftover debugging or placeholder "
	"code, no unrelated changes, consistent with the project's style?\n\n"
	"End by calling submit_verdict exactly once: verdict PASS when the change is "
	"complete and correct, FAIL otherwise; reasons, the evidence for your verdict "
	"(name files and functions); required_fixes, for FAIL, each a specific change the "
	"next iteration must make (empty for PASS). Do not fail a change for matters of "
	"taste.\n\n"
	"Your turn ends only when you call submit_verdict; an answer in plain text is not "
	"a verdict."
	COMMON_RULES;

static const char ask_prompt[] =
	"You are forgex, a coding assistant. Answer the user's question about the software "
	"project in the workspace. Use your read-only tools (list_dir, read_file, search) "
	"to look at the code before you answer when the question concerns it; paths are "
	"relative to the workspace. You cannot change anything. When you know enough, "
	"answer in plain text, without calling a tool. Be concise and accurate; name the "
	"files and functions you rely on, and say so when you are not sure.";

static const char chat_prompt[] =
	"You are forgex, a coding assistant in an interactive session with a developer, in "
	"the software project of the workspace. Each user message is a request, a question "
	"or a follow-up; the conversation goes on across messages.\n\n"
	"Your tools: list_dir, read_file, search and repo_map to look; edit_file to change "
	"part of a file (old_string must match the file exactly once), write_file to create "
	"or replace a whole file, delete_file and move_file; git_status and git_diff; "
	"run_command to run one program (an argv list, no shell; it passes the command "
	"policy and the sandbox, the person may be asked to approve it, and a refusal comes "
	"back as the result: do not retry a refused command unchanged); run_tests to run "
	"the project's tests. Paths are relative to the workspace.\n\n"
	"How to work: read a file before you change it and follow the project's style; make "
	"the change the person asked for and nothing else; run the tests when you changed "
	"code; when a tool fails, read its result and fix the cause. When you are done, or "
	"need the person's answer, reply in plain text without calling a tool: say briefly "
	"what you did (files, tests and their outcome) or what you need. The person sees "
	"every tool call and can undo each of your turns.";

const char *role_chat_prompt(void)
{
	return chat_prompt;
}

const char *role_prompt(enum agent_role role)
{
	switch (role) {
	case ROLE_ARCHITECT: return architect_prompt;
	case ROLE_BUILDER: return builder_prompt;
	case ROLE_EXPERT_CODER: return expert_prompt;
	case ROLE_SUPERVISOR: return supervisor_prompt;
	case ROLE__COUNT: break;
	}
	return "";
}

const char *role_ask_prompt(void)
{
	return ask_prompt;
}

void role_build_prompt(struct buf *out, enum agent_role role, const char *workspace,
		       const char *extra)
{
	buf_addstr(out, role_prompt(role));
	if (workspace && *workspace)
		buf_addf(out, "\nThe workspace is %s.\n", workspace);
	if (extra && *extra) {
		buf_addstr(out, "\n# Project context\n\n");
		buf_addstr(out, extra);
		if (out->buf[out->len - 1] != '\n')
			buf_addch(out, '\n');
	}
}

unsigned role_permissions(enum agent_role role)
{
	if ((int)role < 0 || role >= ROLE__COUNT)
		return 0;
	return permissions_for_role(config_role_name(role));
}

const char *role_terminal_tool(enum agent_role role)
{
	switch (role) {
	case ROLE_ARCHITECT: return ROLE_TOOL_SUBMIT_PLAN;
	case ROLE_BUILDER: return ROLE_TOOL_FINISH;
	case ROLE_EXPERT_CODER: return ROLE_TOOL_FINISH;
	case ROLE_SUPERVISOR: return ROLE_TOOL_SUBMIT_VERDICT;
	case ROLE__COUNT: break;
	}
	return NULL;
}

/* The model families trained on the apply_patch envelope (as the Codex CLI and OpenCode pick). */
static int patch_family(const char *model)
{
	char m[128];
	const char *p, *slash;
	size_t i;

	if (!model)
		return 0;
	slash = strrchr(model, '/');	/* "openai/gpt-5", "azure/o3-mini" */
	p = slash ? slash + 1 : model;
	for (i = 0; p[i] && i + 1 < sizeof(m); i++)
		m[i] = (char)(p[i] >= 'A' && p[i] <= 'Z' ? p[i] - 'A' + 'a' : p[i]);
	m[i] = '\0';
	if (strstr(m, "gpt-oss"))
		return 0;	/* the open-weight models speak the harmony format, not this one */
	if (strstr(m, "gpt-4.1") || strstr(m, "gpt-5") || strstr(m, "codex"))
		return 1;
	/* the o-series: o1, o3, o4-mini, ... */
	return m[0] == 'o' && m[1] >= '1' && m[1] <= '9' && (!m[2] || m[2] == '-');
}

unsigned role_edit_tools(const char *setting, const char *model)
{
	if (setting && !strcmp(setting, "edit_file"))
		return ROLE_EDIT_FILE;
	if (setting && !strcmp(setting, "apply_patch"))
		return ROLE_APPLY_PATCH;
	if (setting && !strcmp(setting, "both"))
		return ROLE_EDIT_FILE | ROLE_APPLY_PATCH;
	return patch_family(model) ? ROLE_APPLY_PATCH : ROLE_EDIT_FILE;
}

const char *role_edit_note(unsigned edit)
{
	if (edit == ROLE_APPLY_PATCH)
		return "\nIn this session you change files with apply_patch (one call can add, "
		       "update, move and delete several files), not with edit_file.\n";
	if (edit == (ROLE_EDIT_FILE | ROLE_APPLY_PATCH))
		return "\nYou can change files with edit_file or with apply_patch (one call can "
		       "add, update, move and delete several files).\n";
	return NULL;
}

json_t *role_tools_json(const struct tool_registry *reg, unsigned granted, const char *terminal)
{
	return role_tools_json_for(reg, -1, granted, terminal);
}

json_t *role_tools_json_for(const struct tool_registry *reg, int role, unsigned granted,
			    const char *terminal)
{
	return role_tools_json_edit(reg, role, granted, terminal, ROLE_EDIT_FILE);
}

json_t *role_tools_json_edit(const struct tool_registry *reg, int role, unsigned granted,
			     const char *terminal, unsigned edit)
{
	json_t *all = tools_for_role(reg, PERM_ALL), *out = json_array(), *entry;
	size_t i;

	if (!out)
		die("out of memory");
	/* tools_for_role() lists in registration order; keep that order */
	json_array_foreach(all, i, entry) {
		const char *name = jsonx_str(json_object_get(entry, "function"), "name");
		const struct tool *t = name ? registry_find(reg, name) : NULL;

		if (!t)
			continue;
		if ((!strcmp(t->name, "edit_file") && !(edit & ROLE_EDIT_FILE)) ||
		    (!strcmp(t->name, "apply_patch") && !(edit & ROLE_APPLY_PATCH)))
			continue;
		if (t->roles && (role < 0 || !(t->roles & (1u << role))))
			continue;
		if (t->flags & TOOL_TERMINAL) {
			if (!terminal || strcmp(terminal, t->name))
				continue;
		} else if (!permissions_permit(granted, t->needs)) {
			continue;
		}
		if (json_array_append(out, entry) < 0)
			die("out of memory");
	}
	json_decref(all);
	return out;
}

json_t *role_tools(const struct tool_registry *reg, enum agent_role role)
{
	return role_tools_json(reg, role_permissions(role), role_terminal_tool(role));
}

int role_tool_allowed(const struct tool_registry *reg, const char *name, const char *terminal,
		      struct buf *why)
{
	const struct tool *t = name ? registry_find(reg, name) : NULL;

	if (!t || !(t->flags & TOOL_TERMINAL))
		return 1;
	if (terminal && !strcmp(terminal, t->name))
		return 1;
	if (terminal)
		buf_addf(why, "refused: %s is not available to this role; end with %s", t->name,
			 terminal);
	else
		buf_addf(why, "refused: %s is not available here; answer in plain text when you "
			 "are done", t->name);
	return 0;
}

/* ---- the terminal tools ---- */

static int tool_submit_plan(struct tool_ctx *ctx, const json_t *args, struct buf *result)
{
	json_t *steps = json_object_get(args, "steps"), *step, *tc;
	struct strvec ids = STRVEC_INIT;
	size_t i;
	int ret = 0;

	(void)ctx;
	json_array_foreach(steps, i, step) {
		const char *id = jsonx_str(step, "id");

		if (strvec_find(&ids, id) >= 0) {
			buf_addf(result, "error: steps[%zu]: the id \"%s\" is used twice; give every "
				 "step its own id", i, id);
			ret = FX_EINVAL;
			goto out;
		}
		strvec_push(&ids, id);
	}
	tc = json_object_get(args, "test_command");
	if (tc && !json_array_size(tc)) {
		buf_addstr(result, "error: test_command is empty; leave it out when you do not "
			   "know how the tests run");
		ret = FX_EINVAL;
		goto out;
	}
	buf_addf(result, "accepted: a plan of %zu step%s", json_array_size(steps),
		 json_array_size(steps) == 1 ? "" : "s");
out:
	strvec_clear(&ids);
	return ret;
}

static int tool_finish(struct tool_ctx *ctx, const json_t *args, struct buf *result)
{
	(void)ctx;
	(void)args;
	buf_addstr(result, "accepted");
	return 0;
}

static int tool_submit_verdict(struct tool_ctx *ctx, const json_t *args, struct buf *result)
{
	const char *verdict = jsonx_str(args, "verdict");
	size_t fixes = json_array_size(json_object_get(args, "required_fixes"));

	(void)ctx;
	if (!strcmp(verdict, "FAIL") && !fixes) {
		buf_addstr(result, "error: a FAIL verdict must list at least one required fix, "
			   "each a specific change to make");
		return FX_EINVAL;
	}
	if (!strcmp(verdict, "PASS") && fixes) {
		buf_addstr(result, "error: a PASS verdict cannot require fixes; give FAIL, or "
			   "leave required_fixes empty");
		return FX_EINVAL;
	}
	buf_addf(result, "accepted: %s", verdict);
	return 0;
}

#define STRINGS "{\"type\": \"array\", \"items\": {\"type\": \"string\"}}"

int roles_register_tools(struct tool_registry *reg)
{
	static const struct tool_def defs[] = {
		{ ROLE_TOOL_SUBMIT_PLAN,
		  "Hand in your plan. This ends your turn: call it once, when the plan is "
		  "complete.",
		  "{\"type\": \"object\", \"additionalProperties\": false,"
		  " \"required\": [\"summary\", \"steps\", \"acceptance\"],"
		  " \"properties\": {"
		  "  \"summary\": {\"type\": \"string\", \"minLength\": 1,"
		  "   \"description\": \"What will change and why, in two or three sentences\"},"
		  "  \"steps\": {\"type\": \"array\", \"minItems\": 1,"
		  "   \"description\": \"The steps, in the order to carry them out\","
		  "   \"items\": {\"type\": \"object\", \"additionalProperties\": false,"
		  "    \"required\": [\"id\", \"title\", \"description\", \"files\"],"
		  "    \"properties\": {"
		  "     \"id\": {\"type\": \"string\", \"minLength\": 1},"
		  "     \"title\": {\"type\": \"string\", \"minLength\": 1},"
		  "     \"description\": {\"type\": \"string\", \"minLength\": 1},"
		  "     \"files\": " STRINGS "}}},"
		  "  \"acceptance\": {\"type\": \"array\", \"items\": {\"type\": \"string\"},"
		  "   \"description\": \"Observable criteria that show the request is met\"},"
		  "  \"test_command\": {\"type\": \"array\", \"items\": {\"type\": \"string\"},"
		  "   \"description\": \"The argv that runs the project's tests, if known\"}"
		  " }}",
		  0, TOOL_TERMINAL, tool_submit_plan, NULL },
		{ ROLE_TOOL_FINISH,
		  "Say that your work is complete. This ends your turn: call it once, after the "
		  "change is made and tested.",
		  "{\"type\": \"object\", \"additionalProperties\": false,"
		  " \"required\": [\"summary\"],"
		  " \"properties\": {"
		  "  \"summary\": {\"type\": \"string\", \"minLength\": 1,"
		  "   \"description\": \"What you changed, file by file, the outcome of the "
		  "tests, and anything left open\"}"
		  " }}",
		  0, TOOL_TERMINAL, tool_finish, NULL },
		{ ROLE_TOOL_SUBMIT_VERDICT,
		  "Hand in your verdict on the change. This ends your turn: call it once.",
		  "{\"type\": \"object\", \"additionalProperties\": false,"
		  " \"required\": [\"verdict\", \"reasons\", \"required_fixes\"],"
		  " \"properties\": {"
		  "  \"verdict\": {\"type\": \"string\", \"enum\": [\"PASS\", \"FAIL\"]},"
		  "  \"reasons\": {\"type\": \"array\", \"minItems\": 1, \"items\": {\"type\": \"string\"},"
		  "   \"description\": \"The evidence for the verdict\"},"
		  "  \"required_fixes\": {\"type\": \"array\", \"items\": {\"type\": \"string\"},"
		  "   \"description\": \"For FAIL: each a specific change to make; empty for "
		  "PASS\"}"
		  " }}",
		  0, TOOL_TERMINAL, tool_submit_verdict, NULL },
	};
	size_t i;
	int ret;

	for (i = 0; i < ARRAY_SIZE(defs); i++) {
		ret = registry_add(reg, &defs[i]);
		if (ret < 0)
			return ret;
	}
	return 0;
}
