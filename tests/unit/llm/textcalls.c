/*
 * Tool calls in text: each dialect from a sample written as that model
 * family writes it (taken from the projects' chat templates, parsers and
 * their tests: vLLM's tool parsers, llama.cpp's common/chat parsers, the
 * Qwen and Llama model cards), the JSON repairs and the refusals.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "base/jsonx.h"
#include "llm/textcalls.h"

struct sample {
	const char *what;
	const char *text;
	size_t calls;		/* calls expected */
	const char *name1, *args1;	/* the first call: name and arguments (sorted compact JSON) */
	const char *name2, *args2;	/* the second, when there is one */
	const char *dialect;
	const char *prose;	/* what is left of the text (NULL: not checked) */
	const char *repaired;	/* a word of the repair note (NULL: none expected) */
};

static const struct sample samples[] = {
	/* Qwen 2.5 / Hermes 2 Pro, exactly as the chat template asks (one per block) */
	{ "hermes", "<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"src/main.c\"}}\n"
	  "</tool_call>", 1, "read_file", "{\"path\":\"src/main.c\"}", NULL, NULL, "hermes", "", NULL },
	{ "hermes, two blocks and prose",
	  "I'll look at both files.\n<tool_call>\n{\"name\": \"read_file\", \"arguments\": "
	  "{\"path\": \"a.c\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"search\", \"arguments\": "
	  "{\"pattern\": \"TODO\"}}\n</tool_call>", 2, "read_file", "{\"path\":\"a.c\"}", "search",
	  "{\"pattern\":\"TODO\"}", "hermes", "I'll look at both files.", NULL },
	{ "hermes, closing tag cut by the stop token",
	  "<tool_call>\n{\"name\": \"list_dir\", \"arguments\": {\"path\": \".\"}}", 1, "list_dir",
	  "{\"path\":\".\"}", NULL, NULL, "hermes", "", NULL },
	/* Qwen3-Coder's XML body (its qwen3coder_tool_parser) */
	{ "qwen3-coder xml",
	  "<tool_call>\n<function=read_file>\n<parameter=path>\nsrc/util.c\n</parameter>\n"
	  "<parameter=offset>\n10\n</parameter>\n</function>\n</tool_call>", 1, "read_file",
	  "{\"offset\":10,\"path\":\"src/util.c\"}", NULL, NULL, "hermes", "", NULL },
	/* Llama 3.1 / 3.2 JSON tool calling (vLLM llama3_json) */
	{ "llama3 python_tag", "<|python_tag|>{\"name\": \"search\", \"parameters\": {\"pattern\": "
	  "\"main\"}}", 1, "search", "{\"pattern\":\"main\"}", NULL, NULL, "llama3", "", NULL },
	{ "llama3 python_tag, two calls with ;",
	  "<|python_tag|>{\"name\": \"read_file\", \"parameters\": {\"path\": \"a\"}}; "
	  "{\"name\": \"read_file\", \"parameters\": {\"path\": \"b\"}}<|eom_id|>", 2, "read_file",
	  "{\"path\":\"a\"}", "read_file", "{\"path\":\"b\"}", "llama3", "", NULL },
	{ "llama3 bare JSON", "{\"name\": \"list_dir\", \"parameters\": {\"path\": \"src\"}}", 1,
	  "list_dir", "{\"path\":\"src\"}", NULL, NULL, "bare", "", NULL },
	{ "llama3 bare JSON inside prose",
	  "Here is the result: {\"name\": \"search\", \"parameters\": {\"pattern\": \"x {y} [z]\"}} "
	  "Would you like to know more?", 1, "search", "{\"pattern\":\"x {y} [z]\"}", NULL, NULL,
	  "bare", "Here is the result:  Would you like to know more?", NULL },
	/* Mistral 7B v0.3 (pre-v11 tokenizer) */
	{ "mistral pre-v11", "[TOOL_CALLS] [{\"name\": \"read_file\", \"arguments\": {\"path\": "
	  "\"README.md\"}}]", 1, "read_file", "{\"path\":\"README.md\"}", NULL, NULL, "mistral", "",
	  NULL },
	{ "mistral pre-v11, arguments first, two calls",
	  "[TOOL_CALLS][{\"arguments\":{\"path\": \"a\"}, \"name\": \"read_file\"}, {\"name\": "
	  "\"list_dir\", \"arguments\": {\"path\": \".\"}}]", 2, "read_file", "{\"path\":\"a\"}",
	  "list_dir", "{\"path\":\".\"}", "mistral", "", NULL },
	/* Mistral Small 3.1+ / Devstral (v11+), raw through llama.cpp and with [ARGS] skipped by vLLM */
	{ "mistral v11 [ARGS]", "[TOOL_CALLS]read_file[ARGS]{\"path\": \"src/main.c\"}", 1,
	  "read_file", "{\"path\":\"src/main.c\"}", NULL, NULL, "mistral", "", NULL },
	{ "mistral v11, special tokens skipped, two calls",
	  "[TOOL_CALLS]read_file{\"path\": \"a\"}[TOOL_CALLS]search{\"pattern\": \"b\"}", 2,
	  "read_file", "{\"path\":\"a\"}", "search", "{\"pattern\":\"b\"}", "mistral", "", NULL },
	{ "mistral [CALL_ID]", "[TOOL_CALLS]list_dir[CALL_ID]a1b2c3d4e[ARGS]{\"path\": \".\"}", 1,
	  "list_dir", "{\"path\":\".\"}", NULL, NULL, "mistral", "", NULL },
	/* DeepSeek V3 / R1 (vLLM deepseekv3 parser, llama.cpp) */
	{ "deepseek v3",
	  "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>read_file\n```json\n"
	  "{\"path\": \"src/main.c\"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>", 1, "read_file",
	  "{\"path\":\"src/main.c\"}", NULL, NULL, "deepseek", "", NULL },
	{ "deepseek v3, two calls after prose",
	  "Let me check.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>read_file\n"
	  "```json\n{\"path\": \"a\"}\n```<｜tool▁call▁end｜>\n<｜tool▁call▁begin｜>function"
	  "<｜tool▁sep｜>search\n```json\n{\"pattern\": \"b\"}\n```<｜tool▁call▁end｜>"
	  "<｜tool▁calls▁end｜>", 2, "read_file", "{\"path\":\"a\"}", "search",
	  "{\"pattern\":\"b\"}", "deepseek", "Let me check.", NULL },
	/* DeepSeek V3.1 */
	{ "deepseek v3.1",
	  "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>list_dir<｜tool▁sep｜>{\"path\": \"src\"}"
	  "<｜tool▁call▁end｜><｜tool▁calls▁end｜>", 1, "list_dir", "{\"path\":\"src\"}", NULL, NULL,
	  "deepseek", "", NULL },
	/* forgex's own text mode, and JSON in a fence as many models answer */
	{ "fenced forgex", "```json\n{\"tool\": \"read_file\", \"arguments\": {\"path\": \"x\"}}\n```",
	  1, "read_file", "{\"path\":\"x\"}", NULL, NULL, "fenced", "", NULL },
	{ "fenced name/parameters, no tag", "Calling:\n```\n{\"name\": \"search\", \"parameters\": "
	  "{\"pattern\": \"y\"}}\n```\nDone.", 1, "search", "{\"pattern\":\"y\"}", NULL, NULL,
	  "fenced", "Calling:\n\nDone.", NULL },
	{ "fenced OpenAI shape", "```json\n{\"type\": \"function\", \"function\": {\"name\": "
	  "\"list_dir\", \"arguments\": \"{\\\"path\\\": \\\".\\\"}\"}}\n```", 1, "list_dir",
	  "{\"path\":\".\"}", NULL, NULL, "fenced", "", NULL },
	/* Cohere Command R: the fence after "Action:" is that family's */
	{ "command-r action", "Action: ```json\n[{\"tool_name\": \"read_file\", \"parameters\": "
	  "{\"path\": \"a\"}}]\n```", 1, "read_file", "{\"path\":\"a\"}", NULL, NULL,
	  "command-r", "", NULL },
	{ "command-r action, fence on the next line", "I will read it.\nAction:\r\n```json\n"
	  "[{\"tool_name\": \"read_file\", \"parameters\": {\"path\": \"b\"}}]\n```", 1,
	  "read_file", "{\"path\":\"b\"}", NULL, NULL, "command-r", "I will read it.",
	  NULL },
	/* Spark X2.5 decoded with its bar tags: GLM's body after Granite's marker */
	{ "spark bar tags, two calls", "<|tool_call|>\nread_file<arg_key>path</arg_key><arg_value>a"
	  "</arg_value>\n<|/tool_call|><|tool_call|>\nlist_dir\n<arg_key>path</arg_key>"
	  "<arg_value>.</arg_value>\n<|/tool_call|>", 2, "read_file", "{\"path\":\"a\"}", "list_dir",
	  "{\"path\":\".\"}", "glm", "", NULL },
	{ "spark bar tags, cut by the stop token", "Reading.<|tool_call|>\nread_file<arg_key>path"
	  "</arg_key><arg_value>b</arg_value>", 1, "read_file", "{\"path\":\"b\"}", NULL, NULL, "glm",
	  "Reading.", NULL },
	{ "granite's JSON after the same marker", "<|tool_call|>[{\"name\": \"read_file\", "
	  "\"arguments\": {\"path\": \"g\"}}]", 1, "read_file", "{\"path\":\"g\"}", NULL, NULL,
	  "granite", "", NULL },
	/* Gemma 3's ```tool_code: a call as Python would use it */
	{ "gemma tool_code", "```tool_code\nread_file(path=\"a\")\n```", 1, "read_file",
	  "{\"path\":\"a\"}", NULL, NULL, "gemma", "", NULL },
	{ "gemma tool_code, the call in print()", "Reading it.\n\n```tool_code\nprint(list_dir("
	  "path=\".\"))\n```", 1, "list_dir", "{\"path\":\".\"}", NULL, NULL, "gemma",
	  "Reading it.", NULL },
	{ "gemma tool_code, assigned then printed", "```tool_code\nx = read_file(path='b')\n"
	  "print(x)\n```", 1, "read_file", "{\"path\":\"b\"}", NULL, NULL, "gemma", "", NULL },
	{ "gemma tool_code, two printed calls", "```tool_code\nprint(read_file(path=\"c\"))\n"
	  "print(search(pattern=\"d\"))\n```", 2, "read_file", "{\"path\":\"c\"}", "search",
	  "{\"pattern\":\"d\"}", "gemma", "", NULL },
	/* repairs */
	{ "repair: trailing commas", "<tool_call>\n{\"name\": \"read_file\", \"arguments\": "
	  "{\"path\": \"a\", \"limit\": 5,},}\n</tool_call>", 1, "read_file",
	  "{\"limit\":5,\"path\":\"a\"}", NULL, NULL, "hermes", "", "trailing comma" },
	{ "repair: missing closing braces", "<|python_tag|>{\"name\": \"read_file\", "
	  "\"parameters\": {\"path\": \"a\"", 1, "read_file", "{\"path\":\"a\"}", NULL, NULL,
	  "llama3", "", "closing" },
	{ "repair: raw newlines in a string",
	  "<tool_call>\n{\"name\": \"write_file\", \"arguments\": {\"path\": \"a.py\", \"content\": "
	  "\"def f():\n\treturn 1\n\"}}\n</tool_call>", 1, "write_file",
	  "{\"content\":\"def f():\\n\\treturn 1\\n\",\"path\":\"a.py\"}", NULL, NULL, "hermes", "",
	  "line breaks" },
	/* Ollama's parser tests: Laguna restarts a call whole (one call), not another one */
	{ "a <tool_call> restarted whole is one call", "<tool_call>read_file\n{\"path\": \"a\"}\n"
	  "<tool_call>read_file\n{\"path\": \"a\"}</tool_call>", 1, "read_file",
	  "{\"path\":\"a\"}", NULL, NULL, "hermes", "", NULL },
	{ "a <tool_call> cut by another call is two", "<tool_call>read_file\n{\"path\": \"a\"}\n"
	  "<tool_call>read_file\n{\"path\": \"b\"}</tool_call>", 2, "read_file",
	  "{\"path\":\"a\"}", "read_file", "{\"path\":\"b\"}", "hermes", "", NULL },
	{ "LongCat-Flash, the functions. namespace dropped",
	  "<longcat_tool_call>functions.read_file\n<longcat_arg_key>path</longcat_arg_key>\n"
	  "<longcat_arg_value>a.c</longcat_arg_value>\n</longcat_tool_call>", 1, "read_file",
	  "{\"path\":\"a.c\"}", NULL, NULL, "longcat-flash", "", NULL },
	{ "Glimmer, an ATEM block with no header", "<|message|><atem:function_calls>\n"
	  "<atem:invoke name=\"search\">\n<atem:parameter name=\"pattern\">x</atem:parameter>\n"
	  "</atem:invoke>\n</atem:function_calls><|eom|>", 1, "search", "{\"pattern\":\"x\"}",
	  NULL, NULL, "glimmer", "", NULL },
	/* not calls */
	{ "Glimmer, an answer that is an ATEM block for no offered tool",
	  " to=user<|message|><atem:function_calls>\n<atem:invoke name=\"other\">\n</atem:invoke>\n"
	  "</atem:function_calls><|eot|>", 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL },
	{ "<user> text that names no tool", "<user>hello\n<arg_key>k</arg_key><arg_value>v"
	  "</arg_value></user>", 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL },
	{ "prose naming a <function= tag", "the tag <function=read_file is documented here", 0, NULL,
	  NULL, NULL, NULL, NULL, NULL, NULL },
	{ "prose mentioning JSON", "Use {\"name\": \"value\"} in the config; see ```json\n"
	  "{\"a\": 1}\n```", 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL },
	{ "an unknown name in bare JSON is prose", "{\"name\": \"get_weather\", \"parameters\": "
	  "{\"city\": \"Paris\"}}", 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL },
	{ "a name alone is not a call", "The tool {\"name\": \"read_file\"} reads files.", 0, NULL,
	  NULL, NULL, NULL, NULL, NULL, NULL },
};

static const char *const tool_names[] = { "read_file", "write_file", "list_dir", "search", NULL };

static void tools(struct strvec *sv)
{
	size_t i;

	for (i = 0; tool_names[i]; i++)
		strvec_push(sv, tool_names[i]);
}

static void check_args(const char *what, const char *got, const char *want)
{
	json_t *j = json_loads(got, 0, NULL);
	char *s;

	if (!j)
		fail_msg("%s: arguments are not JSON: %s", what, got);
	s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
	if (strcmp(s, want))
		fail_msg("%s: arguments %s, want %s", what, s, want);
	free(s);
	json_decref(j);
}

static void test_textcalls_dialects(void **state)
{
	struct strvec names = STRVEC_INIT;
	size_t i;

	(void)state;
	tools(&names);
	for (i = 0; i < ARRAY_SIZE(samples); i++) {
		const struct sample *s = &samples[i];
		struct text_calls tc = TEXT_CALLS_INIT;
		size_t n = textcalls_parse(&tc, s->text, strlen(s->text), &names);

		if (n != s->calls || tc.errors.nr)
			fail_msg("%s: %zu calls (want %zu), %zu errors%s%s", s->what, n, s->calls,
				 tc.errors.nr, tc.errors.nr ? ": " : "",
				 tc.errors.nr ? tc.errors.v[0] : "");
		if (n) {
			assert_string_equal(tc.v[0].name, s->name1);
			check_args(s->what, tc.v[0].arguments, s->args1);
			assert_string_equal(tc.v[0].dialect, s->dialect);
			if (s->repaired) {
				if (!tc.v[0].repaired || !strstr(tc.v[0].repaired, s->repaired))
					fail_msg("%s: repair note \"%s\", want \"%s\"", s->what,
						 tc.v[0].repaired ? tc.v[0].repaired : "(none)",
						 s->repaired);
			} else if (tc.v[0].repaired) {
				fail_msg("%s: unexpected repair \"%s\"", s->what, tc.v[0].repaired);
			}
		}
		if (n > 1) {
			assert_string_equal(tc.v[1].name, s->name2);
			check_args(s->what, tc.v[1].arguments, s->args2);
		}
		if (s->prose && strcmp(tc.prose.buf, s->prose))
			fail_msg("%s: prose \"%s\", want \"%s\"", s->what, tc.prose.buf, s->prose);
		textcalls_release(&tc);
	}
	strvec_clear(&names);
}

struct refusal {
	const char *what;
	const char *text;
	const char *says;	/* a part of the message */
	const char *names;	/* the tool it names, or NULL */
};

static const struct refusal refusals[] = {
	{ "string never closed", "<tool_call>\n{\"name\": \"write_file\", \"arguments\": {\"path\": "
	  "\"a\", \"content\": \"abc", "closing '\"' is missing", "write_file" },
	{ "key without value", "<|python_tag|>{\"name\": \"read_file\", \"parameters\": {\"path\":",
	  "key that has no value", "read_file" },
	{ "single quotes", "[TOOL_CALLS]read_file[ARGS]{'path': 'a'}", "double quotes", "read_file" },
	{ "python literal", "<tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\", "
	  "\"all\": True}}</tool_call>", "malformed", "read_file" },
	{ "unknown tool in a marker", "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {}}\n"
	  "</tool_call>", "no tool called \"get_weather\"; the tools are: read_file", NULL },
	{ "mistral name without arguments", "[TOOL_CALLS]read_file", "arguments object is missing",
	  "read_file" },
	{ "deepseek bad json", "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>"
	  "search\n```json\n{\"pattern\": \"a\" \"b\"}\n```<｜tool▁call▁end｜>", "comma is missing",
	  "search" },
	{ "malformed fenced call to a known tool", "```json\n{\"tool\": \"read_file\", "
	  "\"arguments\": {\"path\": \"a\" \"limit\": 2}}\n```", "comma is missing", "read_file" },
	{ "malformed Command R action names its form", "Action: ```json\n[{\"tool_name\": "
	  "\"read_file\", \"parameters\": {\"path\": \"a}}]\n```", "(command-r format) could not be "
	  "read", "read_file" },
	{ "Command R's form in its nudge", "Action:\n```json\n[{\"tool_name\": \"read_file\", "
	  "\"parameters\": {\"path\": \"a\" \"limit\": 2}}]\n```", "as Action: ```json\n"
	  "[{\"tool_name\": \"TOOL\", \"parameters\": {...}}]\n```", "read_file" },
	{ "arguments not an object", "<tool_call>{\"name\": \"read_file\", \"arguments\": "
	  "[1, 2]}</tool_call>", "not a JSON object", "read_file" },
	{ "empty block", "<tool_call>\n</tool_call>", "empty", NULL },
	{ "<function= cut at the reply's end", "<function=read_file", "is not closed with '>'",
	  NULL },
	{ "Glimmer, a message to one tool calling another", " to=read_file<|message|>"
	  "<atem:function_calls>\n<atem:invoke name=\"search\">\n</atem:invoke>\n"
	  "</atem:function_calls><|eom|>", "addressed to read_file", "search" },
	{ "Glimmer, a message to a tool without its ATEM block", " to=read_file<|message|>"
	  "{\"path\": \"a\"}<|eom|>", "holds no <atem:function_calls> block", "read_file" },
	/* found by fuzzing: the value read with reasoning blanked would be written with spaces */
	{ "a value holding reasoning markers and bytes that are not text",
	  "<tool_call>{\"name\": \"write_file\", \"arguments\": {\"path\": \"a\", \"content\": "
	  "\"x<think>y\xff</think>z\"}}</tool_call>", "could not be read as written", "write_file" },
};

static void test_textcalls_refusals(void **state)
{
	struct strvec names = STRVEC_INIT;
	size_t i;

	(void)state;
	tools(&names);
	for (i = 0; i < ARRAY_SIZE(refusals); i++) {
		const struct refusal *r = &refusals[i];
		struct text_calls tc = TEXT_CALLS_INIT;
		size_t n = textcalls_parse(&tc, r->text, strlen(r->text), &names);

		if (n || tc.errors.nr != 1)
			fail_msg("%s: %zu calls, %zu errors (want 0 and 1)", r->what, n, tc.errors.nr);
		if (!strstr(tc.errors.v[0], r->says))
			fail_msg("%s: \"%s\" does not say \"%s\"", r->what, tc.errors.v[0], r->says);
		/* every refusal says nothing ran and how to send the call again */
		assert_non_null(strstr(tc.errors.v[0], "nothing was run"));
		assert_non_null(strstr(tc.errors.v[0], "Send the call again"));
		if (r->names) {
			struct buf want = BUF_INIT;

			buf_addf(&want, "call to %s", r->names);
			if (!strstr(tc.errors.v[0], want.buf))
				fail_msg("%s: \"%s\" does not name %s", r->what, tc.errors.v[0],
					 r->names);
			buf_release(&want);
		}
		textcalls_release(&tc);
	}
	strvec_clear(&names);
}

/* The repair alone: what it fixes, and that it never adds a value. */
static void test_textcalls_repair_json(void **state)
{
	static const struct {
		const char *in, *out;	/* out NULL: refused */
	} cases[] = {
		{ "{\"a\": 1}", "{\"a\": 1}" },
		{ "{\"a\": [1, 2,], }", "{\"a\": [1, 2] }" },
		{ "{\"a\": {\"b\": \"x\"", "{\"a\": {\"b\": \"x\"}}" },
		{ "{\"a\": [1, 2", "{\"a\": [1, 2]}" },
		{ "{\"a\": 1,", NULL },	/* cut after a comma: the next value is lost */
		{ "{\"a\": {", NULL },	/* cut right after a value opens: not an empty one */
		{ "{\"s\": \"l1\nl2\"}", "{\"s\": \"l1\\nl2\"}" },
		{ "{\"a\": 1} trailing text", "{\"a\": 1}" },
		{ "{\"a\":", NULL },
		{ "{\"a\"", NULL },
		{ "{\"a\": \"open", NULL },
		{ "{\"a\": 1]", NULL },
		{ "{a: 1}", NULL },
		{ "{\"a\" 1}", NULL },
		{ "}", NULL },
	};
	size_t i, used;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		struct buf out = BUF_INIT, notes = BUF_INIT, why = BUF_INIT;
		int ret = textcalls_repair_json(&out, &notes, &why, cases[i].in, strlen(cases[i].in),
						&used);

		if (cases[i].out) {
			if (ret < 0)
				fail_msg("%s: refused: %s", cases[i].in, why.buf);
			assert_string_equal(out.buf, cases[i].out);
		} else {
			if (ret == 0)
				fail_msg("%s: repaired as %s", cases[i].in, out.buf);
			assert_true(why.len > 0);
			assert_int_equal(out.len, 0);
		}
		buf_release(&out);
		buf_release(&notes);
		buf_release(&why);
	}
}

/* A reply that is nothing but prose, or empty, gives nothing. */
static void test_textcalls_nothing(void **state)
{
	struct strvec names = STRVEC_INIT;
	struct text_calls tc = TEXT_CALLS_INIT;

	(void)state;
	tools(&names);
	assert_int_equal(textcalls_parse(&tc, "", 0, &names), 0);
	assert_int_equal(tc.errors.nr, 0);
	textcalls_release(&tc);
	assert_int_equal(textcalls_parse(&tc, "All done: the tests pass.", 25, &names), 0);
	assert_int_equal(tc.errors.nr, 0);
	assert_string_equal(tc.prose.buf, "All done: the tests pass.");
	textcalls_release(&tc);
	/* print() of text in a tool_code fence runs nothing and asks nothing */
	assert_int_equal(textcalls_parse(&tc, "```tool_code\nprint(\"hi\")\n```", 28, &names), 0);
	assert_int_equal(tc.errors.nr, 0);
	textcalls_release(&tc);
	strvec_clear(&names);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_textcalls_dialects),
		cmocka_unit_test(test_textcalls_refusals),
		cmocka_unit_test(test_textcalls_repair_json),
		cmocka_unit_test(test_textcalls_nothing),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
