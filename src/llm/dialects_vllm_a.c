/*
 * Dialects met on the second round through vLLM's parser list: the value
 * rule of GLM's <arg_value> (which Poolside's models share) and the
 * families with a tag language of their own. See textcalls_int.h for the
 * scan state and textcalls.h for what a call must be.
 */
#include <ctype.h>
#include <string.h>

#include <jansson.h>

#include "base/jsonx.h"
#include "llm/textcalls_int.h"

/* ---- GLM / Poolside <arg_value> ---- */

json_t *tc_glm_value(const char *s, size_t n)
{
	size_t a = 0, b = n;
	json_t *j;

	/*
	 * The template writes a string as it is and anything else as JSON, with
	 * nothing around either: a file's content keeps its indent and final
	 * newline, while " 420 " is still the number.
	 */
	while (a < b && isspace((unsigned char)s[a]))
		a++;
	while (b > a && isspace((unsigned char)s[b - 1]))
		b--;
	j = tc_xml_value(s + a, b - a);
	if (!json_is_string(j))
		return j;
	json_decref(j);
	return jsonx_stringn_lossy(s, n);
}
