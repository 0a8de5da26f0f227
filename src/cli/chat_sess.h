/*
 * The rows of the lists of sessions (/resume, `forgex log`): a session's
 * age, its turns and its first message, terminal-safe and cut to the
 * width. The session itself is src/pipeline/chat.c (chat_session_info).
 */
#ifndef FORGEX_CLI_CHAT_SESS_H
#define FORGEX_CLI_CHAT_SESS_H

#include <stdio.h>

#include "base/buf.h"
#include "pipeline/chat.h"

/** The columns of the terminal `f` is; 0 when it is not one (nothing is cut). */
size_t chat_sess_columns(FILE *f);

/** "just now", "42 s ago", "3 min ago", "5 h ago", "2 days ago" ("?" for `then` 0). */
void chat_sess_age(struct buf *out, long long then, long long now);

/**
 * The first line of `text` (a model's, a person's: anyone's), made
 * terminal-safe and cut to `cols` columns (0: not cut): "..." where it
 * was cut, and with `mark_more` where more lines follow.
 */
void chat_sess_cut(struct buf *out, const char *text, size_t cols, int mark_more);

/** "AGE  N turns  FIRST" for `si`, at most `cols` columns (0: the first line whole). */
void chat_sess_row(struct buf *out, const struct chat_session_info *si, long long now, size_t cols);

#endif
