/*
 * A terminal with forgex on it, for end-to-end tests of the session
 * (tests/e2e/chat*.c): the real binary as the leader of a new session
 * whose controlling terminal is a pseudo-terminal, typed at key by key,
 * against build/mockllm over real HTTP on 127.0.0.1. What the person sees
 * is in `out` with the time each byte arrived; what the model was sent is
 * the mock's log (fx_requests()).
 */
#ifndef FORGEX_TESTS_TERM_H
#define FORGEX_TESTS_TERM_H

#include <stddef.h>
#include <sys/types.h>

#include <jansson.h>

#include "base/buf.h"
#include "helpers/scripted.h"
#include "helpers/testutil.h"
#include "mockllm/mockctl.h"

/* Seconds one step (a prompt, a reply, a command) may take on a loaded machine. */
#define TERM_STEP 60.0
/* The session's prompt as written on a terminal with colour. */
#define TERM_PROMPT "forgex>\033[m "

struct term {
	pid_t pid;
	int master;
	struct buf out;		/* everything forgex wrote to the terminal */
	double *at;		/* at[i]: when the read that ended at ends[i] returned */
	size_t *ends;
	size_t reads, alloc;
	size_t mark;		/* term_expect() searches from here */
	const char *prompt;	/* the prompt as written: TERM_PROMPT, or without colour */
	int status;		/* exit status, or 128+signal; -1 while running */
};

/* Sleep `ms` milliseconds (whole, across signals). */
void term_pause_ms(long ms);
/* JSON written with single quotes, for readable scripts (caller frees). */
char *term_sq(const char *s);

/*
 * The text from `from` on, printable: escapes shown as \e, \r dropped, and
 * the terminal mode switches a person does not see (\e[?2004h, bracketed
 * paste on, and the like) left out (caller frees).
 */
char *term_shown(const struct term *t, size_t from);
/* The printable text between offsets `from` and `to` (caller frees). */
char *term_between(const struct term *t, size_t from, size_t to);

/*
 * Start `forgex args...` in project `p` (its HOME and XDG_CONFIG_HOME, and
 * what sc_proj_env() added) on a new 100x40 terminal, as a terminal
 * emulator would: TERM=xterm, no NO_COLOR unless the project sets it.
 */
void term_start(struct term *t, const struct sc_proj *p, const char *const *args);
/* Make the terminal `rows` x `cols` (forgex gets SIGWINCH, as from a terminal emulator). */
void term_resize(struct term *t, int rows, int cols);
/* Read what is there, waiting up to `ms`; 0 once the terminal is closed by every holder. */
int term_pump(struct term *t, int ms);
/* When the byte at `off` of the output was read. */
double term_time_at(const struct term *t, size_t off);
/*
 * Wait up to `timeout` s for `text` after the mark; the mark moves past it.
 * Returns the offset where it begins. Fails the test (with what the
 * terminal showed) when it does not come.
 */
size_t term_expect_at(struct term *t, const char *text, double timeout, int line);
#define term_expect(t, text) term_expect_at((t), (text), TERM_STEP, __LINE__)
/*
 * Wait for the prompt, then for the line editor to be reading (a key typed
 * before libedit turns canonical mode off is taken by the kernel's line
 * discipline).
 */
size_t term_prompt_at(struct term *t, int line);
#define term_prompt(t) term_prompt_at((t), __LINE__)
/* Type `keys` (raw bytes, as a terminal sends them). */
void term_send(struct term *t, const char *keys);
/* Type `keys` one key press at a time, as a person does (escape sequences whole). */
void term_type(struct term *t, const char *keys);
/* Wait for forgex to leave; its exit status (128+signal when killed). */
int term_wait_at(struct term *t, double timeout, int line);
#define term_wait(t) term_wait_at((t), TERM_STEP, __LINE__)
void term_release(struct term *t);
/* cmocka teardown: kills forgex of a test that failed midway. */
int term_teardown(void **state);
/* The session id from the banner ("forgex\e[m session ID: model ..."); caller frees. */
char *term_banner_id(const struct term *t);

/* The project, the mock and the terminal of one test. */
struct fx {
	struct mock m;
	struct sc_proj p;
	struct term t;
	char *script;
};

void fx_start(struct fx *f, const char *script_sq, const char *mode);
void fx_release(struct fx *f);
/* `forgex chat` (or `args`) on the terminal, up to its first prompt. */
void fx_chat(struct fx *f, const char *const *args);
/* Type a line and Enter; wait for the prompt after what it did. Returns the offset after the echo. */
size_t fx_say(struct fx *f, const char *line);
/* The chat requests' bodies (caller decrefs). */
json_t *fx_requests(const struct fx *f);
/* The content of the last message of request `n` with `role`. */
const char *req_last_of(json_t *reqs, size_t n, const char *role);

/* Processes whose command line holds `marker` (zombies have none), named in `who` (may be NULL). */
int tu_count_procs(const char *marker, struct buf *who);
/*
 * A tree, to compare: every folder and file under `dir` but .git, .forgex
 * and __pycache__, with its mode and (for files) bytes, sorted (caller frees).
 */
char *tu_tree(const char *dir);
/* qsort() order of an array of strings. */
int tu_cmp_str(const void *a, const void *b);

#endif
