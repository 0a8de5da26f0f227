#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/jsonx.h"
#include "sandbox/permissions.h"
#include "tools/patch.h"
#include "tools/registry.h"

void registry_init(struct tool_registry *reg)
{
	reg->tools = NULL;
	reg->nr = reg->alloc = 0;
}

void registry_release(struct tool_registry *reg)
{
	size_t i;

	for (i = 0; i < reg->nr; i++) {
		free(reg->tools[i].name);
		free(reg->tools[i].description);
		json_decref(reg->tools[i].schema);
	}
	free(reg->tools);
	registry_init(reg);
}

static int valid_name(const char *name)
{
	size_t i, n = strlen(name);

	if (!n || n > 64)
		return 0;
	for (i = 0; i < n; i++) {
		char c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '-'))
			return 0;
	}
	return 1;
}

/* ---- schema subset ---- */

static const char *const type_names[] = {
	"object", "array", "string", "integer", "number", "boolean", "null",
};

static int known_type(const char *t)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(type_names); i++)
		if (!strcmp(t, type_names[i]))
			return 1;
	return 0;
}

static int check_at(const json_t *s, struct buf *where)
{
	const char *key;
	json_t *v;
	size_t i;

	if (!json_is_object(s))
		return err_set(FX_EINVAL, "schema%s: not an object", where->buf);
	json_object_foreach((json_t *)s, key, v) {
		size_t mark = where->len;
		int ret = 0;

		if (!strcmp(key, "type")) {
			if (json_is_string(v)) {
				if (!known_type(json_string_value(v)))
					ret = err_set(FX_EINVAL, "schema%s: unknown type '%s'",
						      where->buf, json_string_value(v));
			} else if (json_is_array(v) && json_array_size(v)) {
				json_t *t;

				json_array_foreach(v, i, t)
					if (!json_is_string(t) || !known_type(json_string_value(t)))
						ret = err_set(FX_EINVAL, "schema%s: bad type list",
							      where->buf);
			} else {
				ret = err_set(FX_EINVAL, "schema%s: \"type\" must be a name or a list",
					      where->buf);
			}
		} else if (!strcmp(key, "properties")) {
			const char *pk;
			json_t *pv;

			if (!json_is_object(v))
				return err_set(FX_EINVAL, "schema%s: \"properties\" must be an object",
					       where->buf);
			json_object_foreach(v, pk, pv) {
				buf_addf(where, ".%s", pk);
				ret = check_at(pv, where);
				buf_setlen(where, mark);
				if (ret < 0)
					return ret;
			}
		} else if (!strcmp(key, "required")) {
			json_t *r;

			if (!json_is_array(v))
				return err_set(FX_EINVAL, "schema%s: \"required\" must be a list",
					       where->buf);
			json_array_foreach(v, i, r)
				if (!json_is_string(r) ||
				    !json_object_get(json_object_get(s, "properties"),
						     json_string_value(r)))
					return err_set(FX_EINVAL, "schema%s: \"required\" names a "
						       "property that is not defined", where->buf);
		} else if (!strcmp(key, "items")) {
			buf_addstr(where, "[]");
			ret = check_at(v, where);
			buf_setlen(where, mark);
		} else if (!strcmp(key, "enum")) {
			if (!json_is_array(v) || !json_array_size(v))
				ret = err_set(FX_EINVAL, "schema%s: \"enum\" must be a non-empty list",
					      where->buf);
		} else if (!strcmp(key, "minimum") || !strcmp(key, "maximum")) {
			if (!json_is_number(v))
				ret = err_set(FX_EINVAL, "schema%s: \"%s\" must be a number",
					      where->buf, key);
		} else if (!strcmp(key, "minLength") || !strcmp(key, "minItems")) {
			if (!json_is_integer(v) || json_integer_value(v) < 0)
				ret = err_set(FX_EINVAL, "schema%s: \"%s\" must be a count",
					      where->buf, key);
		} else if (!strcmp(key, "additionalProperties")) {
			if (!json_is_false(v))
				ret = err_set(FX_EINVAL, "schema%s: only \"additionalProperties\": "
					      "false is supported", where->buf);
		} else if (!strcmp(key, "description")) {
			if (!json_is_string(v))
				ret = err_set(FX_EINVAL, "schema%s: \"description\" must be text",
					      where->buf);
		} else {
			ret = err_set(FX_EINVAL, "schema%s: keyword \"%s\" is not supported",
				      where->buf, key);
		}
		if (ret < 0)
			return ret;
	}
	return 0;
}

int schema_check(const json_t *schema)
{
	struct buf where = BUF_INIT;
	int ret = check_at(schema, &where);

	buf_release(&where);
	if (ret < 0)
		return ret;
	if (!json_is_string(json_object_get(schema, "type")) ||
	    strcmp(json_string_value(json_object_get(schema, "type")), "object"))
		return err_set(FX_EINVAL, "schema: the parameters must be of type \"object\"");
	if (!json_is_false(json_object_get(schema, "additionalProperties")))
		return err_set(FX_EINVAL, "schema: the parameters must set "
			       "\"additionalProperties\": false");
	return 0;
}

static const char *type_of(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "object";
	case JSON_ARRAY: return "array";
	case JSON_STRING: return "string";
	case JSON_INTEGER: return "integer";
	case JSON_REAL: return "number";
	case JSON_TRUE: case JSON_FALSE: return "boolean";
	case JSON_NULL: return "null";
	}
	return "?";
}

static int has_type(const json_t *v, const char *t)
{
	if (!strcmp(t, "integer")) {
		double d;

		if (json_is_integer(v))
			return 1;
		if (!json_is_real(v))
			return 0;
		d = json_real_value(v);
		return isfinite(d) && d == floor(d) && fabs(d) < 9.0e15;
	}
	if (!strcmp(t, "number"))
		return json_is_number(v);
	return !strcmp(t, type_of(v));
}

/* "where" for messages: "" at the top, else "name: " or "files[2]: ". */
static void say(struct buf *why, const struct buf *where, const char *fmt, ...) FX_PRINTF(3, 4);
static void say(struct buf *why, const struct buf *where, const char *fmt, ...)
{
	va_list ap;

	if (where->len)
		buf_addf(why, "%s: ", where->buf);
	va_start(ap, fmt);
	buf_vaddf(why, fmt, ap);
	va_end(ap);
}

static int validate_at(const json_t *s, const json_t *v, struct buf *where, struct buf *why)
{
	json_t *type = json_object_get(s, "type"), *x;
	size_t i, mark = where->len;

	if (json_is_string(type) && !has_type(v, json_string_value(type))) {
		say(why, where, "expected %s, got %s", json_string_value(type), type_of(v));
		return FX_EINVAL;
	}
	if (json_is_array(type)) {
		int ok = 0;
		json_t *t;

		json_array_foreach(type, i, t)
			ok |= has_type(v, json_string_value(t));
		if (!ok) {
			say(why, where, "got %s, which is not an allowed type", type_of(v));
			return FX_EINVAL;
		}
	}
	if (json_is_string(v) && strlen(json_string_value(v)) != json_string_length(v)) {
		say(why, where, "text must not contain NUL characters");
		return FX_EINVAL;
	}
	x = json_object_get(s, "enum");
	if (x) {
		int ok = 0;
		json_t *e;

		json_array_foreach(x, i, e)
			ok |= json_equal(e, v);
		if (!ok) {
			struct buf list = BUF_INIT;

			json_array_foreach(x, i, e) {
				if (i)
					buf_addstr(&list, ", ");
				jsonx_dump(&list, e, JSON_COMPACT);
			}
			say(why, where, "must be one of %s", list.buf);
			buf_release(&list);
			return FX_EINVAL;
		}
	}
	if (json_is_number(v)) {
		double d = json_number_value(v);

		x = json_object_get(s, "minimum");
		if (x && d < json_number_value(x)) {
			say(why, where, "must be at least %g", json_number_value(x));
			return FX_EINVAL;
		}
		x = json_object_get(s, "maximum");
		if (x && d > json_number_value(x)) {
			say(why, where, "must be at most %g", json_number_value(x));
			return FX_EINVAL;
		}
	}
	x = json_object_get(s, "minLength");
	if (x && json_is_string(v) &&
	    json_string_length(v) < (size_t)json_integer_value(x)) {
		say(why, where, "must not be empty");
		return FX_EINVAL;
	}
	x = json_object_get(s, "minItems");
	if (x && json_is_array(v) && json_array_size(v) < (size_t)json_integer_value(x)) {
		say(why, where, "must have at least %lld item%s", (long long)json_integer_value(x),
		    json_integer_value(x) == 1 ? "" : "s");
		return FX_EINVAL;
	}
	if (json_is_object(v)) {
		json_t *props = json_object_get(s, "properties"), *r, *pv;
		const char *key;

		x = json_object_get(s, "required");
		json_array_foreach(x, i, r) {
			if (!json_object_get(v, json_string_value(r))) {
				say(why, where, "missing required property \"%s\"", json_string_value(r));
				return FX_EINVAL;
			}
		}
		json_object_foreach((json_t *)v, key, pv) {
			json_t *ps = json_object_get(props, key);
			int ret;

			if (!ps) {
				if (json_is_false(json_object_get(s, "additionalProperties"))) {
					struct buf known = BUF_INIT;
					const char *k;
					json_t *kv;

					json_object_foreach(props, k, kv) {
						if (known.len)
							buf_addstr(&known, ", ");
						buf_addstr(&known, k);
					}
					say(why, where, "unknown property \"%s\" (known: %s)", key,
					    known.len ? known.buf : "none");
					buf_release(&known);
					return FX_EINVAL;
				}
				continue;
			}
			if (where->len)
				buf_addch(where, '.');
			buf_addstr(where, key);
			ret = validate_at(ps, pv, where, why);
			buf_setlen(where, mark);
			if (ret < 0)
				return ret;
		}
	}
	if (json_is_array(v) && (x = json_object_get(s, "items"))) {
		json_t *item;

		json_array_foreach(v, i, item) {
			int ret;

			buf_addf(where, "[%zu]", i);
			ret = validate_at(x, item, where, why);
			buf_setlen(where, mark);
			if (ret < 0)
				return ret;
		}
	}
	return 0;
}

int schema_validate(const json_t *schema, const json_t *value, struct buf *why)
{
	struct buf where = BUF_INIT;
	int ret = validate_at(schema, value, &where, why);

	buf_release(&where);
	return ret;
}

/* ---- registry ---- */

int registry_add(struct tool_registry *reg, const struct tool_def *def)
{
	json_t *schema = NULL;
	struct tool *t;
	int ret;

	if (!def->name || !valid_name(def->name))
		return err_set(FX_EINVAL, "tool name '%s' is not [a-zA-Z0-9_-]{1,64}",
			       def->name ? def->name : "(null)");
	if (!def->description || !*def->description || !def->fn || !def->parameters)
		return err_set(FX_EINVAL, "tool '%s': description, parameters and handler are required",
			       def->name);
	if (registry_find(reg, def->name))
		return err_set(FX_EEXISTS, "tool '%s' is already registered", def->name);
	ret = jsonx_parse(&schema, def->parameters, strlen(def->parameters), def->name);
	if (ret < 0)
		return ret;
	ret = def->flags & TOOL_OPEN_SCHEMA ? (json_is_object(schema) ? 0 :
		err_set(FX_EINVAL, "the parameters schema is not an object")) : schema_check(schema);
	if (ret < 0) {
		json_decref(schema);
		return err_prefix(ret, "tool '%s'", def->name);
	}
	ALLOC_GROW(reg->tools, reg->nr + 1, reg->alloc);
	t = &reg->tools[reg->nr++];
	t->name = xstrdup(def->name);
	t->description = xstrdup(def->description);
	t->schema = schema;
	t->needs = def->needs;
	t->flags = def->flags;
	t->fn = def->fn;
	t->data = def->data;
	t->roles = def->roles;
	return 0;
}

const struct tool *registry_find(const struct tool_registry *reg, const char *name)
{
	size_t i;

	if (!name)
		return NULL;
	for (i = 0; i < reg->nr; i++)
		if (!strcmp(reg->tools[i].name, name))
			return &reg->tools[i];
	return NULL;
}

json_t *tools_for_role(const struct tool_registry *reg, unsigned granted)
{
	json_t *arr = json_array();
	size_t i;

	if (!arr)
		die("out of memory");
	for (i = 0; i < reg->nr; i++) {
		const struct tool *t = &reg->tools[i];
		json_t *fn, *entry;

		if (!permissions_permit(granted, t->needs))
			continue;
		fn = json_object();
		entry = json_object();
		if (!fn || !entry)
			die("out of memory");
		jsonx_set(fn, "name", jsonx_string(t->name));
		jsonx_set(fn, "description", jsonx_string(t->description));
		jsonx_set(fn, "parameters", json_deep_copy(t->schema));
		jsonx_set(entry, "type", jsonx_string("function"));
		jsonx_set(entry, "function", fn);
		if (json_array_append_new(arr, entry) < 0)
			die("out of memory");
	}
	return arr;
}

/* ---- context ---- */

int tool_ctx_init(struct tool_ctx *ctx, const struct tool_registry *reg, const char *workspace)
{
	struct tool_limits lim = TOOL_LIMITS_DEFAULT;
	struct wspath_root root = WSPATH_ROOT_INIT;
	int ret = wspath_root_open(&root, workspace);

	if (ret < 0)
		return ret;
	ctx->hooks = NULL;
	ctx->registry = reg;
	ctx->root = root;
	strvec_init(&ctx->changed);
	ctx->limits = lim;
	ctx->current = NULL;
	ctx->role = -1;
	memset(&ctx->user_hooks, 0, sizeof(ctx->user_hooks));
	return 0;
}

void tool_ctx_release(struct tool_ctx *ctx)
{
	wspath_root_release(&ctx->root);
	strvec_clear(&ctx->changed);
	ctx->current = NULL;
}

void tool_ctx_changed(struct tool_ctx *ctx, const char *rel)
{
	if (strvec_find(&ctx->changed, rel) < 0)
		strvec_push(&ctx->changed, rel);
	if (ctx->hooks && ctx->hooks->after_change)
		ctx->hooks->after_change(ctx->hooks->data, rel);
}

int tool_ctx_before_change(struct tool_ctx *ctx, const struct wspath_loc *loc)
{
	if (ctx->hooks && ctx->hooks->before_change)
		return ctx->hooks->before_change(ctx->hooks->data, loc);
	return 0;
}

int tool_ctx_before_tmp(struct tool_ctx *ctx, const char *rel, const char *tmp)
{
	if (ctx->hooks && ctx->hooks->before_tmp)
		return ctx->hooks->before_tmp(ctx->hooks->data, rel, tmp);
	return 0;
}

void *tool_ctx_data(const struct tool_ctx *ctx)
{
	return ctx->current ? ctx->current->data : NULL;
}

/* ---- arguments ---- */

const char *tool_arg_str(const json_t *args, const char *key)
{
	return jsonx_str(args, key);
}

long long tool_arg_int(const json_t *args, const char *key, long long def)
{
	json_t *v = json_object_get(args, key);

	if (json_is_integer(v))
		return json_integer_value(v);
	if (json_is_real(v) && has_type(v, "integer"))
		return (long long)json_real_value(v);
	return def;
}

int tool_arg_bool(const json_t *args, const char *key, int def)
{
	return jsonx_bool(args, key, def);
}

/* ---- dispatch ---- */

static int all_blank(const char *s)
{
	for (; *s; s++)
		if (*s != ' ' && *s != '\t' && *s != '\n' && *s != '\r')
			return 0;
	return 1;
}

int tool_dispatch(struct tool_ctx *ctx, unsigned granted, const char *name,
		  const char *arguments, struct buf *result)
{
	const struct tool *t = registry_find(ctx->registry, name);
	struct buf why = BUF_INIT;
	json_t *args = NULL;
	size_t start = result->len;
	int ret;

	if (!t) {
		size_t i, n = 0;

		buf_addf(result, "refused: unknown tool '%s'; the tools are: ", name ? name : "");
		for (i = 0; i < ctx->registry->nr; i++) {
			if (!permissions_permit(granted, ctx->registry->tools[i].needs))
				continue;
			buf_addf(result, "%s%s", n++ ? ", " : "", ctx->registry->tools[i].name);
		}
		if (!n)
			buf_addstr(result, "(none for this role)");
		return TOOL_REFUSED;
	}
	if (permissions_deny_reason(&why, granted, t->needs)) {
		buf_addf(result, "refused: %s (the tool %s is not available to this role)",
			 why.buf, t->name);
		buf_release(&why);
		return TOOL_REFUSED;
	}
	if (!arguments || all_blank(arguments)) {
		args = json_object();
		if (!args)
			die("out of memory");
	} else if (jsonx_parse(&args, arguments, strlen(arguments), "arguments") < 0) {
		buf_addf(result, "refused: invalid arguments for %s: not JSON (%s)", t->name,
			 err_last());
		return TOOL_REFUSED;
	}
	if (!json_is_object(args)) {
		buf_addf(result, "refused: invalid arguments for %s: expected a JSON object, got %s",
			 t->name, type_of(args));
		json_decref(args);
		return TOOL_REFUSED;
	}
	if (t->roles && (ctx->role < 0 || !(t->roles & (1u << ctx->role)))) {
		buf_addf(result, "refused: the tool %s is not available to this role", t->name);
		json_decref(args);
		return TOOL_REFUSED;
	}
	if (!(t->flags & TOOL_OPEN_SCHEMA) && schema_validate(t->schema, args, &why) < 0) {
		buf_addf(result, "refused: invalid arguments for %s: %s", t->name, why.buf);
		buf_release(&why);
		json_decref(args);
		return TOOL_REFUSED;
	}
	buf_reset(&why);
	if (ctx->user_hooks.pre && !(t->flags & TOOL_TERMINAL) &&
	    ctx->user_hooks.pre(ctx->user_hooks.data, t->name, ctx->role, args, &why) > 0) {
		buf_addf(result, "refused: blocked by a pre_tool hook: %s",
			 why.len ? why.buf : "(it gave no reason)");
		buf_release(&why);
		json_decref(args);
		return TOOL_REFUSED;
	}
	buf_release(&why);
	err_clear();
	ctx->current = t;
	if (ctx->hooks && ctx->hooks->around_call)
		ctx->hooks->around_call(ctx->hooks->data, t, 0);
	ret = t->fn(ctx, args, result);
	if (ctx->hooks && ctx->hooks->around_call)
		ctx->hooks->around_call(ctx->hooks->data, t, 1);
	ctx->current = NULL;
	if (ctx->user_hooks.post && !(t->flags & TOOL_TERMINAL)) {
		struct buf note = BUF_INIT;

		ctx->user_hooks.post(ctx->user_hooks.data, t->name, ctx->role, args,
				ret >= 0 ? TOOL_OK : TOOL_FAILED, result, &note);
		if (note.len) {
			if (result->len == start && ret < 0)
				buf_addf(result, "error: %s", *err_last() ? err_last() :
					 "the tool failed without saying why");
			buf_addf(result, "\n[post_tool hook] %s", note.buf);
		}
		buf_release(&note);
	}
	json_decref(args);
	if (ret >= 0)
		return TOOL_OK;
	if (result->len == start) {
		const char *msg = err_last();

		buf_addf(result, "error: %s", *msg ? msg : "the tool failed without saying why");
	} else if (strncmp(result->buf + start, "error: ", 7)) {
		struct buf tmp = BUF_INIT;

		buf_add(&tmp, result->buf + start, result->len - start);
		buf_setlen(result, start);
		buf_addstr(result, "error: ");
		buf_addbuf(result, &tmp);
		buf_release(&tmp);
	}
	/* the policy, a person or the sandbox said no: a refusal, not a failure */
	return ret == FX_EDENIED ? TOOL_REFUSED : TOOL_FAILED;
}

int tools_register_builtin(struct tool_registry *reg)
{
	int ret;

	if ((ret = tools_register_fs(reg)) < 0 ||
	    (ret = tools_register_edit(reg)) < 0 ||
	    (ret = tools_register_patch(reg)) < 0 ||
	    (ret = tools_register_search(reg)) < 0 ||
	    (ret = tools_register_git(reg)) < 0)
		return ret;
	return 0;
}
