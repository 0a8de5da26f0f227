/* The wire format: request bodies, whole replies, streamed delta assembly. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "base/jsonx.h"
#include "base/sse.h"
#include "llm/textcalls.h"
#include "llm/wire.h"

static int to_asm(void *data, const char *event, const char *payload, size_t len)
{
	(void)event;
	return wire_asm_event(data, payload, len);
}

static void on_text(void *data, const char *text, size_t len)
{
	struct buf *b = data;

	buf_add(b, text, len);
	buf_addch(b, '|');
}

/*
 * Run `stream` (SSE bytes) through the parser and assembler, fed in two
 * pieces cut at `cut` (or whole when cut > len). Returns the code.
 */
static int assemble(struct llm_response *out, struct buf *texts, const char *stream, size_t cut)
{
	struct wire_asm a;
	struct sse_parser p;
	size_t len = strlen(stream);
	int ret;

	wire_asm_init(&a, texts ? on_text : NULL, texts);
	sse_init(&p, to_asm, &a, 0);
	if (cut > len)
		cut = len;
	ret = sse_feed(&p, stream, cut);
	if (!ret)
		ret = sse_feed(&p, stream + cut, len - cut);
	if (!ret)
		ret = sse_finish(&p);
	if (!ret)
		ret = wire_asm_finish(&a, out);
	sse_release(&p);
	wire_asm_release(&a);
	return ret;
}

#define CHUNK(delta, finish) \
	"data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"gpt-x\"," \
	"\"choices\":[{\"index\":0,\"delta\":" delta ",\"finish_reason\":" finish "}]}\n\n"
#define TC(i, rest) "{\"tool_calls\":[{\"index\":" #i "," rest "}]}"

/* Two parallel calls, their argument pieces interleaved, ids and names first. */
static const char parallel[] =
	CHUNK("{\"role\":\"assistant\",\"content\":null}", "null")
	CHUNK(TC(0, "\"id\":\"call_A\",\"type\":\"function\",\"function\":{\"name\":\"read_file\",\"arguments\":\"\"}"), "null")
	CHUNK(TC(1, "\"id\":\"call_B\",\"type\":\"function\",\"function\":{\"name\":\"list_dir\",\"arguments\":\"\"}"), "null")
	CHUNK(TC(0, "\"function\":{\"arguments\":\"{\\\"pa\"}"), "null")
	CHUNK(TC(1, "\"function\":{\"arguments\":\"{\\\"dir\\\":\"}"), "null")
	CHUNK(TC(0, "\"function\":{\"arguments\":\"th\\\": \\\"src/\"}"), "null")
	CHUNK(TC(1, "\"function\":{\"arguments\":\" \\\"tests\\\"}\"}"), "null")
	CHUNK(TC(0, "\"function\":{\"arguments\":\"main.c\\\"}\"}"), "null")
	CHUNK("{}", "\"tool_calls\"")
	"data: {\"id\":\"c\",\"choices\":[],\"usage\":{\"prompt_tokens\":31,\"completion_tokens\":12,\"total_tokens\":43}}\n\n"
	"data: [DONE]\n\n";

static void check_parallel(const struct llm_response *r)
{
	assert_string_equal(r->content, "");
	assert_int_equal(r->tool_calls_nr, 2);
	assert_string_equal(r->tool_calls[0].id, "call_A");
	assert_string_equal(r->tool_calls[0].name, "read_file");
	assert_string_equal(r->tool_calls[0].arguments, "{\"path\": \"src/main.c\"}");
	assert_string_equal(r->tool_calls[1].id, "call_B");
	assert_string_equal(r->tool_calls[1].name, "list_dir");
	assert_string_equal(r->tool_calls[1].arguments, "{\"dir\": \"tests\"}");
	assert_string_equal(r->finish_reason, "tool_calls");
	assert_string_equal(r->model, "gpt-x");
	assert_true(r->usage.present);
	assert_int_equal(r->usage.prompt_tokens, 31);
	assert_int_equal(r->usage.completion_tokens, 12);
	assert_int_equal(r->usage.total_tokens, 43);
}

static void test_wire_parallel_tool_calls_every_split(void **state)
{
	size_t i, len = strlen(parallel);

	(void)state;
	for (i = 0; i <= len; i++) {
		struct llm_response r = LLM_RESPONSE_INIT;

		assert_int_equal(assemble(&r, NULL, parallel, i), 0);
		check_parallel(&r);
		llm_response_release(&r);
	}
}

static void test_wire_text_deltas_reach_callback(void **state)
{
	const char *s = CHUNK("{\"role\":\"assistant\",\"content\":\"\"}", "null")
			CHUNK("{\"content\":\"Hello\"}", "null")
			CHUNK("{\"content\":\", w\\u00f6rld\"}", "null")
			CHUNK("{}", "\"stop\"") "data: [DONE]\n\n";
	struct llm_response r = LLM_RESPONSE_INIT;
	struct buf texts = BUF_INIT;

	(void)state;
	assert_int_equal(assemble(&r, &texts, s, 1000), 0);
	assert_string_equal(r.content, "Hello, w\xc3\xb6rld");
	/* one callback per non-empty delta, in order */
	assert_string_equal(texts.buf, "Hello|, w\xc3\xb6rld|");
	assert_string_equal(r.finish_reason, "stop");
	assert_false(r.usage.present);
	llm_response_release(&r);
	buf_release(&texts);
}

static void test_wire_length_is_reported(void **state)
{
	const char *s = CHUNK("{\"content\":\"Once upon\"}", "null") CHUNK("{}", "\"length\"")
			"data: [DONE]\n\n";
	struct llm_response r = LLM_RESPONSE_INIT;

	(void)state;
	assert_int_equal(assemble(&r, NULL, s, 1000), 0);
	assert_string_equal(r.finish_reason, "length");
	assert_string_equal(r.content, "Once upon");
	llm_response_release(&r);
}

static void test_wire_cut_stream_is_an_error(void **state)
{
	const char *s = CHUNK("{\"content\":\"Hel\"}", "null") CHUNK("{\"content\":\"lo\"}", "null");
	struct llm_response r = LLM_RESPONSE_INIT;

	(void)state;
	assert_int_equal(assemble(&r, NULL, s, 1000), FX_EPROVIDER);
	assert_non_null(strstr(err_last(), "ended before the reply was complete"));
	assert_null(r.content);
	/* [DONE] without a finish_reason is a complete reply (some servers) */
	assert_int_equal(assemble(&r, NULL, CHUNK("{\"content\":\"ok\"}", "null") "data: [DONE]\n\n",
				  1000), 0);
	assert_string_equal(r.content, "ok");
	assert_string_equal(r.finish_reason, "");
	llm_response_release(&r);
}

static void test_wire_empty_reply_is_an_error(void **state)
{
	struct llm_response r = LLM_RESPONSE_INIT;

	(void)state;
	assert_int_equal(assemble(&r, NULL, CHUNK("{\"role\":\"assistant\"}", "\"stop\"")
				  "data: [DONE]\n\n", 1000), FX_EPROVIDER);
	assert_non_null(strstr(err_last(), "neither text nor tool calls"));
	assert_int_equal(assemble(&r, NULL, "data: [DONE]\n\n", 1000), FX_EPROVIDER);
}

static void test_wire_error_object_in_stream(void **state)
{
	const char *s = CHUNK("{\"content\":\"Hi\"}", "null")
			"data: {\"error\":{\"message\":\"Rate limit reached for model\",\"type\":\"tokens\"}}\n\n";
	struct llm_response r = LLM_RESPONSE_INIT;

	(void)state;
	assert_int_equal(assemble(&r, NULL, s, 17), FX_EPROVIDER);
	assert_string_equal(err_last(), "the server reported an error in the stream: "
			    "Rate limit reached for model");
	assert_int_equal(assemble(&r, NULL, "data: {\"error\":\"plain\"}\n\n", 3), FX_EPROVIDER);
	assert_non_null(strstr(err_last(), ": plain"));
}

static void test_wire_malformed_chunk(void **state)
{
	struct llm_response r = LLM_RESPONSE_INIT;

	(void)state;
	assert_int_equal(assemble(&r, NULL, "data: {\"choices\": [\n\n", 1000), FX_EPROVIDER);
	assert_non_null(strstr(err_last(), "malformed reply"));
	assert_int_equal(assemble(&r, NULL, "data: [1,2]\n\n", 1000), FX_EPROVIDER);
	assert_int_equal(assemble(&r, NULL, "data: {\"choices\":{}}\n\n", 1000), FX_EPROVIDER);
	assert_int_equal(assemble(&r, NULL, CHUNK("{\"tool_calls\":{}}", "null"), 1000),
			 FX_EPROVIDER);
	assert_int_equal(assemble(&r, NULL, CHUNK(TC(-1, "\"id\":\"x\""), "null"), 1000),
			 FX_EPROVIDER);
	assert_int_equal(assemble(&r, NULL, CHUNK("{\"content\":\"a\"}", "\"stop\"")
				  "data: [DONE]\n\ndata: {}\n\n", 1000), FX_EPROVIDER);
	assert_non_null(strstr(err_last(), "after [DONE]"));
}

static void test_wire_calls_without_index_or_id(void **state)
{
	/* Some servers omit "index", or the id; each new id starts a call. */
	const char *s = CHUNK("{\"tool_calls\":[{\"id\":\"a\",\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"x\\\"\"}}]}", "null")
			CHUNK("{\"tool_calls\":[{\"function\":{\"arguments\":\":1}\"}}]}", "null")
			CHUNK("{\"tool_calls\":[{\"id\":\"b\",\"function\":{\"name\":\"g\",\"arguments\":{\"y\":2}}}]}", "null")
			CHUNK(TC(0, "\"function\":{\"name\":\"h\"}"), "\"tool_calls\"");
	struct llm_response r = LLM_RESPONSE_INIT;

	(void)state;
	assert_int_equal(assemble(&r, NULL, s, 1000), 0);
	assert_int_equal(r.tool_calls_nr, 2);
	assert_string_equal(r.tool_calls[0].arguments, "{\"x\":1}");
	assert_string_equal(r.tool_calls[1].name, "g");
	assert_string_equal(r.tool_calls[1].arguments, "{\"y\":2}");
	llm_response_release(&r);
	/* no id at all: one is made up; no arguments: "{}" */
	assert_int_equal(assemble(&r, NULL, CHUNK(TC(0, "\"function\":{\"name\":\"now\"}"),
						  "\"tool_calls\""), 1000), 0);
	assert_string_equal(r.tool_calls[0].id, "call_0");
	assert_string_equal(r.tool_calls[0].arguments, "{}");
	llm_response_release(&r);
	/* a call with no name is an error */
	assert_int_equal(assemble(&r, NULL, CHUNK(TC(0, "\"id\":\"x\""), "\"tool_calls\""), 1000),
			 FX_EPROVIDER);
	assert_non_null(strstr(err_last(), "no function name"));
}

static int parse_str(struct llm_response *r, const char *body)
{
	return wire_parse_reply(r, body, strlen(body));
}

static void test_wire_whole_reply(void **state)
{
	const char *body =
		"{\"id\":\"x\",\"model\":\"m1\",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\","
		"\"content\":null,\"tool_calls\":[{\"id\":\"c1\",\"type\":\"function\",\"function\":"
		"{\"name\":\"grep\",\"arguments\":\"{\\\"q\\\":\\\"x\\\"}\"}},{\"id\":\"c2\",\"type\":"
		"\"function\",\"function\":{\"name\":\"ls\",\"arguments\":{\"d\":\".\"}}}]},"
		"\"finish_reason\":\"tool_calls\"}],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":7}}";
	struct llm_response r = LLM_RESPONSE_INIT;

	(void)state;
	assert_int_equal(wire_parse_reply(&r, body, strlen(body)), 0);
	assert_string_equal(r.content, "");
	assert_int_equal(r.tool_calls_nr, 2);
	assert_string_equal(r.tool_calls[0].arguments, "{\"q\":\"x\"}");
	assert_string_equal(r.tool_calls[1].arguments, "{\"d\":\".\"}");
	assert_string_equal(r.model, "m1");
	assert_int_equal(r.usage.total_tokens, 12);
	llm_response_release(&r);

	assert_int_equal(parse_str(&r, "{\"error\":{\"message\":\"bad model\"}}"), FX_EPROVIDER);
	assert_non_null(strstr(err_last(), "bad model"));
	assert_int_equal(parse_str(&r, "{\"choices\":[]}"), FX_EPROVIDER);
	assert_int_equal(parse_str(&r, "not json"), FX_EPROVIDER);
	assert_non_null(strstr(err_last(), "malformed reply"));
	assert_int_equal(parse_str(&r, "{\"choices\":[{\"message\":{\"content\":\"\"},"
				   "\"finish_reason\":\"stop\"}]}"), FX_EPROVIDER);
	assert_null(r.content);
}

static void test_wire_error_text(void **state)
{
	struct buf b = BUF_INIT;
	char big[2000];

	(void)state;
	wire_error_text(&b, "{\"error\":{\"message\":\"Incorrect API key provided\"}}",
			strlen("{\"error\":{\"message\":\"Incorrect API key provided\"}}"));
	assert_string_equal(b.buf, "Incorrect API key provided");
	buf_reset(&b);
	wire_error_text(&b, "{\"detail\":\"Not Found\"}", 22);
	assert_string_equal(b.buf, "Not Found");
	buf_reset(&b);
	wire_error_text(&b, "<html>\r\n502 Bad Gateway\n</html>\n", 32);
	assert_string_equal(b.buf, "<html>  502 Bad Gateway </html>");
	buf_reset(&b);
	memset(big, 'e', sizeof(big));
	wire_error_text(&b, big, sizeof(big));
	assert_int_equal(b.len, 503);
	buf_reset(&b);
	wire_error_text(&b, "", 0);
	assert_string_equal(b.buf, "(no error text)");
	buf_release(&b);
}

static void test_wire_request_json(void **state)
{
	struct llm_request req = LLM_REQUEST_INIT;
	struct llm_response reply = LLM_RESPONSE_INIT;
	struct buf b = BUF_INIT;
	json_t *schema = json_pack("{s:s, s:{s:{s:s}}, s:[s]}", "type", "object", "properties",
				   "path", "type", "string", "required", "path");
	json_t *j;

	(void)state;
	llm_request_add(&req, LLM_SYSTEM, "You are terse.");
	llm_request_add(&req, LLM_USER, "Read main.c");
	reply.content = xstrdup("");
	reply.tool_calls = xcalloc(1, sizeof(*reply.tool_calls));
	reply.tool_calls_nr = reply.tool_calls_alloc = 1;
	reply.tool_calls[0].id = xstrdup("call_1");
	reply.tool_calls[0].name = xstrdup("read_file");
	reply.tool_calls[0].arguments = xstrdup("{\"path\":\"main.c\"}");
	llm_request_add_reply(&req, &reply);
	llm_request_add_tool_result(&req, "call_1", NULL, "int main(void) {}");
	llm_request_add_tool(&req, "read_file", "Read a file", schema);
	req.tool_choice = xstrdup("auto");
	req.temperature = 0.25;
	req.max_tokens = 100;

	j = llm_request_to_json(&req, "qwen", 1);
	jsonx_dump(&b, j, JSON_COMPACT | JSON_SORT_KEYS);
	assert_string_equal(b.buf,
		"{\"max_tokens\":100,\"messages\":["
		"{\"content\":\"You are terse.\",\"role\":\"system\"},"
		"{\"content\":\"Read main.c\",\"role\":\"user\"},"
		"{\"content\":null,\"role\":\"assistant\",\"tool_calls\":[{\"function\":"
		"{\"arguments\":\"{\\\"path\\\":\\\"main.c\\\"}\",\"name\":\"read_file\"},"
		"\"id\":\"call_1\",\"type\":\"function\"}]},"
		"{\"content\":\"int main(void) {}\",\"role\":\"tool\",\"tool_call_id\":\"call_1\"}],"
		"\"model\":\"qwen\",\"stream\":true,\"stream_options\":{\"include_usage\":true},"
		"\"temperature\":0.25,\"tool_choice\":\"auto\",\"tools\":[{\"function\":"
		"{\"description\":\"Read a file\",\"name\":\"read_file\",\"parameters\":"
		"{\"properties\":{\"path\":{\"type\":\"string\"}},\"required\":[\"path\"],"
		"\"type\":\"object\"}},\"type\":\"function\"}]}");
	json_decref(j);

	/* the request's own model wins; a named tool_choice; no stream; unset knobs absent */
	free(req.tool_choice);
	req.tool_choice = xstrdup("read_file");
	req.model = xstrdup("other");
	req.temperature = -1;
	req.max_tokens = 0;
	j = llm_request_to_json(&req, "qwen", 0);
	assert_string_equal(jsonx_str(j, "model"), "other");
	assert_true(json_is_false(json_object_get(j, "stream")));
	assert_null(json_object_get(j, "stream_options"));
	assert_null(json_object_get(j, "temperature"));
	assert_null(json_object_get(j, "max_tokens"));
	assert_string_equal(jsonx_str(json_object_get(json_object_get(j, "tool_choice"), "function"),
				      "name"), "read_file");
	json_decref(j);
	json_decref(schema);
	buf_release(&b);
	llm_response_release(&reply);
	llm_request_release(&req);
}

static void test_wire_response_json_round_trip(void **state)
{
	const char *body = "{\"model\":\"m\",\"choices\":[{\"message\":{\"content\":\"hi\",\"tool_calls\":"
			   "[{\"id\":\"1\",\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]},"
			   "\"finish_reason\":\"stop\"}]}";
	struct llm_response r = LLM_RESPONSE_INIT, back = LLM_RESPONSE_INIT;
	json_t *j, *j2;

	(void)state;
	assert_int_equal(wire_parse_reply(&r, body, strlen(body)), 0);
	j = llm_response_to_json(&r);
	assert_int_equal(llm_response_from_json(&back, j), 0);
	j2 = llm_response_to_json(&back);
	assert_true(json_equal(j, j2));
	assert_true(json_is_null(json_object_get(j, "usage")));
	json_decref(j2);
	j2 = json_pack("{s:i}", "tool_calls", 1);
	assert_int_equal(llm_response_from_json(&back, j2), FX_EPARSE);
	json_decref(j);
	json_decref(j2);
	llm_response_release(&r);
	llm_response_release(&back);
}

/* Ollama's NDJSON lines (its docs/api.md), and its request body. */
static void test_wire_ollama(void **state)
{
	static const char *const lines[] = {
		"{\"model\":\"llama3.2\",\"created_at\":\"2023-08-04T08:52:19.385406455-07:00\","
		"\"message\":{\"role\":\"assistant\",\"content\":\"The\",\"images\":null},\"done\":false}",
		"{\"model\":\"llama3.2\",\"created_at\":\"2023-08-04T08:52:19.4Z\",\"message\":{\"role\":"
		"\"assistant\",\"content\":\"\",\"tool_calls\":[{\"id\":\"call_x\",\"function\":{\"index\":0,"
		"\"name\":\"get_current_weather\",\"arguments\":{\"format\":\"celsius\",\"location\":"
		"\"Paris, FR\"}}}]},\"done\":false}",
		"{\"model\":\"llama3.2\",\"created_at\":\"2023-08-04T19:22:45.499127Z\",\"message\":"
		"{\"role\":\"assistant\",\"content\":\"\"},\"done_reason\":\"stop\",\"done\":true,"
		"\"total_duration\":4883583458,\"load_duration\":1334875,\"prompt_eval_count\":26,"
		"\"prompt_eval_duration\":342546000,\"eval_count\":282,\"eval_duration\":4535599000}",
	};
	struct wire_asm a;
	struct llm_response r = LLM_RESPONSE_INIT;
	struct llm_request req = LLM_REQUEST_INIT;
	struct llm_message *m;
	struct buf texts = BUF_INIT;
	json_t *j;
	size_t i;

	(void)state;
	wire_asm_init(&a, on_text, &texts);
	for (i = 0; i < ARRAY_SIZE(lines); i++)
		assert_int_equal(wire_ollama_chunk(&a, lines[i], strlen(lines[i])), 0);
	assert_int_equal(wire_asm_finish(&a, &r), 0);
	assert_string_equal(r.content, "The");
	assert_string_equal(texts.buf, "The|");
	assert_int_equal(r.tool_calls_nr, 1);
	assert_string_equal(r.tool_calls[0].id, "call_x");
	assert_string_equal(r.tool_calls[0].name, "get_current_weather");
	assert_string_equal(r.tool_calls[0].arguments, "{\"format\":\"celsius\",\"location\":\"Paris, FR\"}");
	assert_string_equal(r.finish_reason, "tool_calls");
	assert_int_equal(r.usage.prompt_tokens, 26);
	assert_int_equal(r.usage.completion_tokens, 282);
	wire_asm_release(&a);
	llm_response_release(&r);

	/* an error line; data after the last line */
	wire_asm_init(&a, NULL, NULL);
	assert_int_equal(wire_ollama_chunk(&a, "{\"error\":\"model 'x' not found\"}", 31), FX_EPROVIDER);
	assert_non_null(strstr(err_last(), "model 'x' not found"));
	wire_asm_release(&a);
	wire_asm_init(&a, NULL, NULL);
	assert_int_equal(wire_ollama_chunk(&a, lines[2], strlen(lines[2])), 0);
	assert_int_equal(wire_ollama_chunk(&a, lines[0], strlen(lines[0])), FX_EPROVIDER);
	wire_asm_release(&a);

	/* the body: Ollama's shapes, options, messages last */
	llm_request_add(&req, LLM_SYSTEM, "sys");
	m = llm_request_add(&req, LLM_ASSISTANT, NULL);
	llm_message_add_tool_call(m, "c1", "read_file", "{\"path\": \"a\"}");
	llm_request_add_tool_result(&req, "c1", "read_file", "hello");
	req.temperature = 0.5;
	req.max_tokens = 100;
	j = wire_ollama_request(&req, "qwen2.5-coder", 1, 8192);
	{
		struct buf b = BUF_INIT;

		jsonx_dump(&b, j, JSON_COMPACT);
		assert_string_equal(b.buf, "{\"model\":\"qwen2.5-coder\",\"options\":{\"num_ctx\":8192,"
				    "\"temperature\":0.5,\"num_predict\":100},\"stream\":true,\"messages\":"
				    "[{\"role\":\"system\",\"content\":\"sys\"},{\"role\":\"assistant\","
				    "\"content\":\"\",\"tool_calls\":[{\"function\":{\"name\":\"read_file\","
				    "\"arguments\":{\"path\":\"a\"}}}]},{\"role\":\"tool\",\"content\":"
				    "\"hello\",\"tool_name\":\"read_file\"}]}");
		buf_release(&b);
	}
	json_decref(j);
	llm_request_release(&req);
	buf_release(&texts);
}

/*
 * A call written in the reasoning a server sends apart (vLLM's and
 * llama.cpp's reasoning_content, OpenRouter's reasoning) never reaches the
 * reply's text, so it is never taken for a call.
 */
static void test_wire_reasoning_is_not_text(void **state)
{
	static const char stream[] =
		CHUNK("{\"role\":\"assistant\",\"reasoning_content\":\"I could call <tool_call>"
		      "{\\\"name\\\": \\\"delete_file\\\", \\\"arguments\\\": {\\\"path\\\": "
		      "\\\"/\\\"}}</tool_call>\"}", "null")
		CHUNK("{\"reasoning\":\" but no.\"}", "null")
		CHUNK("{\"content\":\"Nothing to delete.\"}", "\"stop\"")
		"data: [DONE]\n\n";
	const char *body =
		"{\"choices\":[{\"message\":{\"role\":\"assistant\",\"reasoning_content\":"
		"\"<tool_call>{\\\"name\\\": \\\"delete_file\\\", \\\"arguments\\\": {}}</tool_call>\","
		"\"content\":\"Done.\"},\"finish_reason\":\"stop\"}]}";
	struct llm_response r = LLM_RESPONSE_INIT;
	struct text_calls tc = TEXT_CALLS_INIT;
	struct strvec tools = STRVEC_INIT;

	(void)state;
	strvec_push(&tools, "delete_file");
	assert_int_equal(assemble(&r, NULL, stream, 40), 0);
	assert_string_equal(r.content, "Nothing to delete.");
	assert_int_equal(r.tool_calls_nr, 0);
	assert_int_equal(textcalls_parse(&tc, r.content, strlen(r.content), &tools), 0);
	assert_int_equal(tc.errors.nr, 0);
	textcalls_release(&tc);
	llm_response_release(&r);
	assert_int_equal(parse_str(&r, body), 0);
	assert_string_equal(r.content, "Done.");
	assert_int_equal(r.tool_calls_nr, 0);
	llm_response_release(&r);
	strvec_clear(&tools);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_wire_parallel_tool_calls_every_split),
		cmocka_unit_test(test_wire_text_deltas_reach_callback),
		cmocka_unit_test(test_wire_length_is_reported),
		cmocka_unit_test(test_wire_cut_stream_is_an_error),
		cmocka_unit_test(test_wire_empty_reply_is_an_error),
		cmocka_unit_test(test_wire_error_object_in_stream),
		cmocka_unit_test(test_wire_malformed_chunk),
		cmocka_unit_test(test_wire_calls_without_index_or_id),
		cmocka_unit_test(test_wire_whole_reply),
		cmocka_unit_test(test_wire_error_text),
		cmocka_unit_test(test_wire_request_json),
		cmocka_unit_test(test_wire_response_json_round_trip),
		cmocka_unit_test(test_wire_ollama),
		cmocka_unit_test(test_wire_reasoning_is_not_text),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
