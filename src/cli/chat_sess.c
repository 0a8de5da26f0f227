/*
 * The session's sessions on the terminal: the rows of /resume and
 * `forgex log` (chat_sess.h), the last turns shown again after a resume,
 * and the files a message attaches with @path (chat_front.h).
 */
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "base/termsafe.h"
#include "base/utf8.h"
#include "cli/chat_front.h"
#include "cli/chat_sess.h"

/* The exchanges shown again after a resume, and the lines of each side. */
#define RECAP_TURNS 3
#define RECAP_USER_LINES 2
#define RECAP_ANSWER_LINES 4

size_t chat_sess_columns(FILE *f)
{
	struct winsize ws;

	if (isatty(fileno(f)) && ioctl(fileno(f), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
		return ws.ws_col;
	return 0;
}

void chat_sess_age(struct buf *out, long long then, long long now)
{
	long long d = now - then;

	if (!then)
		buf_addstr(out, "?");
	else if (d < 10)
		buf_addstr(out, "just now");
	else if (d < 60)
		buf_addf(out, "%lld s ago", d);
	else if (d < 3600)
		buf_addf(out, "%lld min ago", d / 60);
	else if (d < 86400)
		buf_addf(out, "%lld h ago", d / 3600);
	else
		buf_addf(out, "%lld day%s ago", d / 86400, d / 86400 == 1 ? "" : "s");
}

void chat_sess_cut(struct buf *out, const char *text, size_t cols, int mark_more)
{
	size_t n = strcspn(text, "\n"), pos = 0, chars = 0, at_limit = 0;
	size_t limit;
	struct buf safe = BUF_INIT;
	int more = mark_more && text[n] && text[n + 1];

	if (!cols)
		cols = SIZE_MAX;
	limit = cols > 3 ? cols - 3 : cols;

	buf_add_termsafe(&safe, text, n, 0);
	/* one column a character: the escapes are ASCII, and so is most of what is typed */
	while (pos < safe.len) {
		uint32_t cp;
		size_t k = utf8_decode(safe.buf + pos, safe.len - pos, &cp);

		pos += k ? k : 1;
		if (++chars == limit)
			at_limit = pos;
	}
	if (chars <= cols && !more) {
		buf_addbuf(out, &safe);
	} else {
		buf_add(out, safe.buf, chars > limit ? at_limit : safe.len);
		buf_addstr(out, "...");
	}
	buf_release(&safe);
}

void chat_sess_row(struct buf *out, const struct chat_session_info *si, long long now, size_t cols)
{
	size_t start = out->len, used;

	chat_sess_age(out, si->used, now);
	while (out->len - start < 12)
		buf_addch(out, ' ');
	buf_addf(out, "%3zu turn%s  ", si->turns, si->turns == 1 ? " " : "s");
	used = out->len - start;
	chat_sess_cut(out, si->first ? si->first : "", !cols ? 0 : cols > used + 8 ? cols - used : 8,
		      1);
}

/*
 * After a resume: the last exchanges, compactly (the person's message,
 * then the model's last words of that turn), so the person sees where the
 * conversation was.
 */

/* Up to `max` lines of `text`, each cut to the width, after `lead` (the first) or `indent`. */
static void recap_lines(struct front *f, const char *color, const char *lead, const char *indent,
			const char *text, size_t max, size_t cols)
{
	size_t lines = 0;
	const char *p = text;

	while (*p == '\n')
		p++;
	while (*p && lines < max) {
		struct buf b = BUF_INIT;
		const char *nl = strchr(p, '\n');

		/* the last line shown says "..." when more follow */
		chat_sess_cut(&b, p, !cols ? 0 : cols > 12 ? cols - 4 : 8, lines + 1 == max);
		fprintf(f->out, "%s%s%s%s\n", lines ? indent : lead, front_col(f, color), b.buf,
			front_col(f, C_RESET));
		buf_release(&b);
		lines++;
		if (!nl)
			break;
		p = nl + 1;
	}
}

void front_recap(struct front *f)
{
	const struct llm_request *conv = chat_conversation(f->chat);
	size_t users[RECAP_TURNS], nr = 0, i, k, cols = chat_sess_columns(f->out);

	for (i = conv->messages_nr; i-- > 0 && nr < RECAP_TURNS;)
		if (conv->messages[i].role == LLM_USER && conv->messages[i].content)
			users[nr++] = i;
	if (!nr)
		return;
	fprintf(f->out, "%s-- the last %s --%s\n", front_col(f, C_DIM),
		nr == 1 ? "turn" : "turns", front_col(f, C_RESET));
	while (nr-- > 0) {
		const char *answer = NULL;

		i = users[nr];
		recap_lines(f, C_BOLD, "> ", "  ", conv->messages[i].content, RECAP_USER_LINES, cols);
		for (k = i + 1; k < conv->messages_nr && conv->messages[k].role != LLM_USER; k++)
			if (conv->messages[k].role == LLM_ASSISTANT && conv->messages[k].content &&
			    *conv->messages[k].content)
				answer = conv->messages[k].content;
		if (answer)
			recap_lines(f, C_DIM, "  ", "  ", answer, RECAP_ANSWER_LINES, cols);
		else
			fprintf(f->out, "  %s(no answer)%s\n", front_col(f, C_DIM), front_col(f, C_RESET));
	}
	fflush(f->out);
}

/*
 * @path: the files a message names go with it (chat_attach()); what was
 * attached, and what was not and why, is said before the turn.
 */
void front_attach(struct front *f, const char *message, struct buf *out)
{
	struct strvec attached = STRVEC_INIT, refused = STRVEC_INIT;
	size_t i;

	if (!strchr(message, '@')) {
		buf_addstr(out, message);
		return;
	}
	chat_attach(f->chat, message, out, &attached, &refused);
	/* paths and reasons hold what the person typed and names of the project: made safe */
	for (i = 0; i < attached.nr; i++) {
		fprintf(f->out, "%sattached ", front_col(f, C_DIM));
		fputs_termsafe(attached.v[i], f->out, 0);
		fprintf(f->out, "%s\n", front_col(f, C_RESET));
	}
	for (i = 0; i < refused.nr; i++) {
		fprintf(f->out, "%snot attached%s ", front_col(f, C_YELLOW), front_col(f, C_RESET));
		fputs_termsafe(refused.v[i], f->out, 0);
		fputc('\n', f->out);
	}
	fflush(f->out);
	strvec_clear(&attached);
	strvec_clear(&refused);
}
