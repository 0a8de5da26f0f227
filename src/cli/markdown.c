/* The model's Markdown for a terminal, with md4c; see markdown.h. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <md4c.h>

#include "base/termsafe.h"
#include "base/utf8.h"
#include "cli/markdown.h"

#define S_RESET "\033[m"
#define S_BOLD "\033[1m"
#define S_DIM "\033[2m"
#define S_ITALIC "\033[3m"
#define S_UNDER "\033[4m"
#define S_STRIKE "\033[9m"
#define S_CODE "\033[36m"
#define S_NOBOLD "\033[22m"	/* ends bold and dim */
#define S_NOITALIC "\033[23m"
#define S_NOUNDER "\033[24m"
#define S_NOSTRIKE "\033[29m"
#define S_NOCOLOUR "\033[39m"

#define MD_FLAGS (MD_FLAG_TABLES | MD_FLAG_STRIKETHROUGH | MD_FLAG_NOHTML)
/* Containers deeper than this are drawn as the deepest (a hostile nesting costs nothing more). */
#define NEST_MAX 32
/* A table column is padded to at most this many code points. */
#define CELL_PAD_MAX 60
/* The width of a rule (---). */
#define RULE_WIDTH 40

/*
 * The renderer
 */

struct container {
	int quote;		/* a quote (else a list item) */
	unsigned width;		/* a list item: the marker's width */
	int marker_due;		/* a list item whose first line is not written yet */
	char marker[16];
};

struct list {
	int ordered;
	unsigned next;
};

struct cell {
	struct buf text;	/* with its styles */
	size_t width;		/* code points shown */
};

struct rend {
	struct buf *out;
	struct container c[NEST_MAX];
	int depth;		/* open containers (may exceed NEST_MAX) */
	struct list lists[NEST_MAX];
	int nlists;
	int blocks;		/* blocks begun so far at the top */
	int line_start;		/* the next byte begins a row */
	int heading;		/* the level of the open heading, or 0 */
	int strong;
	int code_block;		/* in a code block: 1 fenced, 2 indented */
	/* a link's target, shown after its text when it differs */
	struct buf href, link_text;
	int in_link;
	/* a table: its cells row by row, and how each column aligns */
	int in_table;
	struct cell *cells;
	size_t cells_nr, cells_alloc;
	size_t *row_ends;	/* cells_nr at the end of each row */
	size_t rows_nr, rows_alloc;
	MD_ALIGN *align;
	size_t align_nr, align_alloc;
	int in_cell;
};

static struct buf *dest(struct rend *r)
{
	return r->in_cell ? &r->cells[r->cells_nr - 1].text : r->out;
}

/* A row begins: the bars of the quotes and the indentation (or marker) of the list items. */
static void row_prefix(struct rend *r)
{
	int i, n = r->depth < NEST_MAX ? r->depth : NEST_MAX;

	if (!r->line_start || r->in_cell)
		return;
	r->line_start = 0;
	for (i = 0; i < n; i++) {
		struct container *c = &r->c[i];

		if (c->quote) {
			buf_addstr(r->out, S_DIM "\xe2\x94\x82 " S_NOBOLD);
		} else if (c->marker_due) {
			buf_addstr(r->out, c->marker);
			c->marker_due = 0;
		} else {
			buf_addf(r->out, "%*s", (int)c->width, "");
		}
	}
}

static void style(struct rend *r, const char *s)
{
	buf_addstr(dest(r), s);
}

static void newline(struct rend *r)
{
	if (r->in_cell) {
		/* a cell is one row */
		buf_addch(dest(r), ' ');
		r->cells[r->cells_nr - 1].width++;
		return;
	}
	buf_addch(r->out, '\n');
	r->line_start = 1;
}

static void end_row(struct rend *r)
{
	if (!r->line_start)
		newline(r);
}

static size_t code_points(const char *s, size_t len)
{
	size_t i, n = 0;

	for (i = 0; i < len; i++)
		n += ((unsigned char)s[i] & 0xc0) != 0x80;
	return n;
}

/* Text of the document, made safe; newlines (code blocks) begin rows. */
static void text_out(struct rend *r, const char *s, size_t len)
{
	while (len) {
		const char *nl = memchr(s, '\n', len);
		size_t n = nl ? (size_t)(nl - s) : len;

		if (n) {
			struct buf *d = dest(r);
			size_t before;

			row_prefix(r);
			before = d->len;
			buf_add_termsafe(d, s, n, TERMSAFE_MULTILINE);
			if (r->in_cell)
				r->cells[r->cells_nr - 1].width += code_points(d->buf + before,
									       d->len - before);
			if (r->in_link)
				buf_add(&r->link_text, s, n);
		}
		if (nl) {
			newline(r);
			n++;
		}
		s += n;
		len -= n;
	}
}

/* A block begins: a blank row between blocks at the top. */
static void block_start(struct rend *r)
{
	if (r->depth == 0 && !r->in_table && r->blocks++)
		newline(r);
}

static void push_container(struct rend *r, int quote, const char *marker)
{
	if (r->depth < NEST_MAX) {
		struct container *c = &r->c[r->depth];

		memset(c, 0, sizeof(*c));
		c->quote = quote;
		if (marker) {
			snprintf(c->marker, sizeof(c->marker), "%s", marker);
			c->width = (unsigned)code_points(marker, strlen(marker));
			c->marker_due = 1;
		}
	}
	r->depth++;
}

static void attr_out(struct buf *out, const MD_ATTRIBUTE *a)
{
	buf_add(out, a->text, a->size);
}

static void rule(struct rend *r)
{
	int i;

	row_prefix(r);
	buf_addstr(r->out, S_DIM);
	for (i = 0; i < RULE_WIDTH; i++)
		buf_addstr(r->out, "\xe2\x94\x80");
	buf_addstr(r->out, S_NOBOLD);
	newline(r);
}

static void pad(struct buf *b, size_t n)
{
	while (n--)
		buf_addch(b, ' ');
}

/* The table, its columns as wide as their widest cell (up to CELL_PAD_MAX). */
static void table_out(struct rend *r)
{
	size_t cols = 0, *w, row, i, from = 0;

	for (row = 0; row < r->rows_nr; row++) {
		size_t n = r->row_ends[row] - from;

		if (n > cols)
			cols = n;
		from = r->row_ends[row];
	}
	w = xcalloc(cols ? cols : 1, sizeof(*w));
	from = 0;
	for (row = 0; row < r->rows_nr; row++) {
		for (i = from; i < r->row_ends[row]; i++) {
			size_t cw = r->cells[i].width > CELL_PAD_MAX ? CELL_PAD_MAX : r->cells[i].width;

			if (cw > w[i - from])
				w[i - from] = cw;
		}
		from = r->row_ends[row];
	}
	from = 0;
	for (row = 0; row < r->rows_nr; row++) {
		size_t n = r->row_ends[row] - from;

		row_prefix(r);
		for (i = 0; i < cols; i++) {
			const struct cell *c = i < n ? &r->cells[from + i] : NULL;
			size_t cw = c ? c->width : 0, room = cw < w[i] ? w[i] - cw : 0;
			MD_ALIGN a = i < r->align_nr ? r->align[i] : MD_ALIGN_DEFAULT;
			size_t left = a == MD_ALIGN_RIGHT ? room : a == MD_ALIGN_CENTER ? room / 2 : 0;

			if (i)
				buf_addstr(r->out, S_DIM " \xe2\x94\x82 " S_NOBOLD);
			pad(r->out, left);
			if (c) {
				if (!row)
					buf_addstr(r->out, S_BOLD);
				buf_addbuf(r->out, &c->text);
				if (!row)
					buf_addstr(r->out, S_NOBOLD);
			}
			/* the last column needs no padding on its right */
			if (i + 1 < cols)
				pad(r->out, room - left);
		}
		newline(r);
		if (!row) {
			row_prefix(r);
			buf_addstr(r->out, S_DIM);
			for (i = 0; i < cols; i++) {
				size_t k;

				if (i)
					buf_addstr(r->out, "\xe2\x94\x80\xe2\x94\xbc\xe2\x94\x80");
				for (k = 0; k < w[i]; k++)
					buf_addstr(r->out, "\xe2\x94\x80");
			}
			buf_addstr(r->out, S_NOBOLD);
			newline(r);
		}
		from = r->row_ends[row];
	}
	free(w);
	for (i = 0; i < r->cells_nr; i++)
		buf_release(&r->cells[i].text);
	r->cells_nr = r->rows_nr = r->align_nr = 0;
}

static int enter_block(MD_BLOCKTYPE type, void *detail, void *data)
{
	struct rend *r = data;

	switch (type) {
	case MD_BLOCK_DOC:
		break;
	case MD_BLOCK_QUOTE:
		block_start(r);
		push_container(r, 1, NULL);
		break;
	case MD_BLOCK_UL:
	case MD_BLOCK_OL:
		block_start(r);
		if (r->nlists < NEST_MAX) {
			r->lists[r->nlists].ordered = type == MD_BLOCK_OL;
			r->lists[r->nlists].next = type == MD_BLOCK_OL ?
				((MD_BLOCK_OL_DETAIL *)detail)->start : 0;
		}
		r->nlists++;
		break;
	case MD_BLOCK_LI: {
		char marker[16] = "\xe2\x80\xa2 ";	/* a bullet */
		struct list *l = r->nlists ? &r->lists[(r->nlists < NEST_MAX ? r->nlists : NEST_MAX) - 1]
					   : NULL;

		end_row(r);
		if (l && l->ordered)
			snprintf(marker, sizeof(marker), "%u. ", l->next++ % 1000000000u);
		push_container(r, 0, marker);
		break;
	}
	case MD_BLOCK_HR:
		block_start(r);
		end_row(r);
		rule(r);
		break;
	case MD_BLOCK_H:
		block_start(r);
		end_row(r);
		r->heading = (int)((MD_BLOCK_H_DETAIL *)detail)->level;
		row_prefix(r);
		style(r, r->heading == 1 ? S_BOLD S_UNDER : S_BOLD);
		break;
	case MD_BLOCK_CODE: {
		MD_BLOCK_CODE_DETAIL *d = detail;

		block_start(r);
		end_row(r);
		r->code_block = d->fence_char ? 1 : 2;
		if (d->fence_char) {
			struct buf lang = BUF_INIT;

			attr_out(&lang, &d->lang);
			row_prefix(r);
			buf_addstr(r->out, S_DIM "```");
			buf_add_termsafe(r->out, lang.buf, lang.len, 0);
			buf_addstr(r->out, S_NOBOLD);
			newline(r);
			buf_release(&lang);
		}
		break;
	}
	case MD_BLOCK_HTML:
	case MD_BLOCK_P:
		block_start(r);
		end_row(r);
		break;
	case MD_BLOCK_TABLE:
		block_start(r);
		end_row(r);
		r->in_table = 1;
		r->cells_nr = r->rows_nr = r->align_nr = 0;
		break;
	case MD_BLOCK_THEAD:
	case MD_BLOCK_TBODY:
	case MD_BLOCK_TR:
		break;
	case MD_BLOCK_TH:
	case MD_BLOCK_TD: {
		struct cell *c;

		if (!r->in_table)
			break;
		ALLOC_GROW(r->cells, r->cells_nr + 1, r->cells_alloc);
		c = &r->cells[r->cells_nr++];
		buf_init(&c->text, 0);
		c->width = 0;
		if (!r->rows_nr) {
			ALLOC_GROW(r->align, r->align_nr + 1, r->align_alloc);
			r->align[r->align_nr++] = ((MD_BLOCK_TD_DETAIL *)detail)->align;
		}
		r->in_cell = 1;
		break;
	}
	}
	return 0;
}

static int leave_block(MD_BLOCKTYPE type, void *detail, void *data)
{
	struct rend *r = data;

	(void)detail;
	switch (type) {
	case MD_BLOCK_DOC:
		break;
	case MD_BLOCK_QUOTE:
	case MD_BLOCK_LI:
		end_row(r);
		r->depth--;
		break;
	case MD_BLOCK_UL:
	case MD_BLOCK_OL:
		r->nlists--;
		break;
	case MD_BLOCK_HR:
		break;
	case MD_BLOCK_H:
		style(r, r->heading == 1 ? S_NOUNDER S_NOBOLD : S_NOBOLD);
		r->heading = 0;
		end_row(r);
		break;
	case MD_BLOCK_CODE:
		end_row(r);
		if (r->code_block == 1) {
			row_prefix(r);
			buf_addstr(r->out, S_DIM "```" S_NOBOLD);
			newline(r);
		}
		r->code_block = 0;
		break;
	case MD_BLOCK_HTML:
	case MD_BLOCK_P:
		end_row(r);
		break;
	case MD_BLOCK_TABLE:
		r->in_table = 0;
		r->in_cell = 0;
		table_out(r);
		break;
	case MD_BLOCK_THEAD:
	case MD_BLOCK_TBODY:
		break;
	case MD_BLOCK_TR:
		if (r->in_table) {
			ALLOC_GROW(r->row_ends, r->rows_nr + 1, r->rows_alloc);
			r->row_ends[r->rows_nr++] = r->cells_nr;
		}
		break;
	case MD_BLOCK_TH:
	case MD_BLOCK_TD:
		r->in_cell = 0;
		break;
	}
	return 0;
}

static int enter_span(MD_SPANTYPE type, void *detail, void *data)
{
	struct rend *r = data;

	row_prefix(r);
	switch (type) {
	case MD_SPAN_EM:
		style(r, S_ITALIC);
		break;
	case MD_SPAN_STRONG:
		r->strong++;
		style(r, S_BOLD);
		break;
	case MD_SPAN_CODE:
		style(r, S_CODE);
		break;
	case MD_SPAN_DEL:
		style(r, S_STRIKE);
		break;
	case MD_SPAN_A:
		if (!r->in_link++) {
			buf_reset(&r->href);
			buf_reset(&r->link_text);
			attr_out(&r->href, &((MD_SPAN_A_DETAIL *)detail)->href);
		}
		break;
	case MD_SPAN_IMG:
		text_out(r, "[image: ", 8);
		break;
	default:
		break;
	}
	return 0;
}

static int leave_span(MD_SPANTYPE type, void *detail, void *data)
{
	struct rend *r = data;

	(void)detail;
	switch (type) {
	case MD_SPAN_EM:
		style(r, S_NOITALIC);
		break;
	case MD_SPAN_STRONG:
		/* bold stays on inside a heading or an outer **...** */
		if (!--r->strong && !r->heading)
			style(r, S_NOBOLD);
		break;
	case MD_SPAN_CODE:
		style(r, S_NOCOLOUR);
		break;
	case MD_SPAN_DEL:
		style(r, S_NOSTRIKE);
		break;
	case MD_SPAN_A:
		if (!--r->in_link && r->href.len && (r->href.len != r->link_text.len ||
		    memcmp(r->href.buf, r->link_text.buf, r->href.len))) {
			struct buf *d = dest(r);
			size_t before;

			buf_addstr(d, S_DIM " (");
			before = d->len;
			buf_add_termsafe(d, r->href.buf, r->href.len, 0);
			if (r->in_cell)
				r->cells[r->cells_nr - 1].width += code_points(d->buf + before,
									       d->len - before) + 3;
			buf_addstr(d, ")");
			buf_addstr(d, r->heading || r->strong ? S_NOBOLD S_BOLD : S_NOBOLD);
		}
		break;
	case MD_SPAN_IMG:
		text_out(r, "]", 1);
		break;
	default:
		break;
	}
	return 0;
}

/* An entity as the character it names (a control character is escaped like any other). */
static void entity_out(struct rend *r, const char *s, size_t len)
{
	static const struct { const char *name; const char *text; } named[] = {
		{ "&amp;", "&" }, { "&lt;", "<" }, { "&gt;", ">" }, { "&quot;", "\"" },
		{ "&apos;", "'" }, { "&nbsp;", " " },
	};
	struct buf b = BUF_INIT;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(named); i++)
		if (strlen(named[i].name) == len && !memcmp(named[i].name, s, len)) {
			text_out(r, named[i].text, strlen(named[i].text));
			return;
		}
	if (len > 3 && s[1] == '#') {
		int hex = s[2] == 'x' || s[2] == 'X';
		char *end;
		char num[16];
		unsigned long cp;

		if (len - 3 - hex < sizeof(num)) {
			memcpy(num, s + 2 + hex, len - 3 - hex);
			num[len - 3 - hex] = '\0';
			cp = strtoul(num, &end, hex ? 16 : 10);
			if (!*end && cp && cp <= 0x10ffff && (cp < 0xd800 || cp > 0xdfff)) {
				utf8_encode(&b, (uint32_t)cp);
				text_out(r, b.buf, b.len);
				buf_release(&b);
				return;
			}
		}
	}
	text_out(r, s, len);
}

static int text_cb(MD_TEXTTYPE type, const MD_CHAR *s, MD_SIZE size, void *data)
{
	struct rend *r = data;

	switch (type) {
	case MD_TEXT_NULLCHAR:
		text_out(r, "\xef\xbf\xbd", 3);
		break;
	case MD_TEXT_BR:
	case MD_TEXT_SOFTBR:
		/* the model's line breaks stay */
		newline(r);
		break;
	case MD_TEXT_ENTITY:
		entity_out(r, s, size);
		break;
	case MD_TEXT_CODE:
		if (r->code_block == 2) {
			/* an indented block: each row indented again */
			while (size) {
				const char *nl = memchr(s, '\n', size);
				size_t n = nl ? (size_t)(nl - s) + 1 : size;

				if (r->line_start) {
					row_prefix(r);
					buf_addstr(r->out, "    ");
				}
				text_out(r, s, n);
				s += n;
				size -= (MD_SIZE)n;
			}
			break;
		}
		text_out(r, s, size);
		break;
	default:
		text_out(r, s, size);
		break;
	}
	return 0;
}

void markdown_render(struct buf *out, const char *text, size_t len)
{
	MD_PARSER p;
	struct rend r;
	size_t i;

	memset(&p, 0, sizeof(p));
	p.flags = MD_FLAGS;
	p.enter_block = enter_block;
	p.leave_block = leave_block;
	p.enter_span = enter_span;
	p.leave_span = leave_span;
	p.text = text_cb;
	memset(&r, 0, sizeof(r));
	r.out = out;
	r.line_start = 1;
	buf_init(&r.href, 0);
	buf_init(&r.link_text, 0);
	if (md_parse(text, (MD_SIZE)len, &p, &r) != 0) {
		/* md4c gave up (out of memory): the text as it is, made safe */
		buf_add_termsafe(out, text, len, TERMSAFE_MULTILINE);
	}
	for (i = 0; i < r.cells_nr; i++)
		buf_release(&r.cells[i].text);
	free(r.cells);
	free(r.row_ends);
	free(r.align);
	buf_release(&r.href);
	buf_release(&r.link_text);
}

/*
 * Streaming: which lines are complete blocks
 */

enum held { HELD_NONE, HELD_FENCE, HELD_ROW, HELD_TABLE };

struct markdown_stream {
	struct buf pending;	/* text not rendered yet, from the start of a line */
	size_t shown;		/* bytes of pending's first line already shown as they are */
	enum held held;
	size_t held_end;	/* pending's held lines end here (looked at already) */
	/* how far pending was searched: for a newline; the last line for marks */
	size_t nl_from, plain_to, cut;
	int marked;		/* the last line holds a Markdown mark before plain_to */
	char fence_ch;
	size_t fence_len;
};

struct markdown_stream *markdown_stream_new(void)
{
	struct markdown_stream *m = xcalloc(1, sizeof(*m));

	buf_init(&m->pending, 0);
	return m;
}

void markdown_stream_free(struct markdown_stream *m)
{
	if (!m)
		return;
	buf_release(&m->pending);
	free(m);
}

/* Columns of indentation of `s` (a tab to the next multiple of 4), and its length in `*n`. */
static size_t indent_of(const char *s, size_t len, size_t *n)
{
	size_t i, col = 0;

	for (i = 0; i < len && (s[i] == ' ' || s[i] == '\t'); i++)
		col = s[i] == '\t' ? (col / 4 + 1) * 4 : col + 1;
	*n = i;
	return col;
}

/* A fence line of at least 3 ` or ~ (its char and length), or 0. */
static size_t fence_at(const char *s, size_t len, char *ch)
{
	size_t in, i;

	if (indent_of(s, len, &in) > 3 || in >= len || (s[in] != '`' && s[in] != '~'))
		return 0;
	for (i = in; i < len && s[i] == s[in]; i++)
		;
	if (i - in < 3)
		return 0;
	/* "```a``` b" is a code span, not a fence */
	if (s[in] == '`' && memchr(s + i, '`', len - i))
		return 0;
	*ch = s[in];
	return i - in;
}

static int closes_fence(const struct markdown_stream *m, const char *s, size_t len)
{
	size_t in, i;

	if (indent_of(s, len, &in) > 3)
		return 0;
	for (i = in; i < len && s[i] == m->fence_ch; i++)
		;
	if (i - in < m->fence_len)
		return 0;
	for (; i < len; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\n' && s[i] != '\r')
			return 0;
	return 1;
}

static int is_row(const char *s, size_t len)
{
	size_t in;

	return indent_of(s, len, &in) <= 3 && in < len && s[in] == '|';
}

/* The delimiter row of a table: |, -, : and spaces, with a -. */
static int is_delimiter(const char *s, size_t len)
{
	size_t i;
	int dash = 0;

	if (!is_row(s, len))
		return 0;
	for (i = 0; i < len; i++) {
		if (s[i] == '-')
			dash = 1;
		else if (!strchr("|: \t\r\n", s[i]))
			return 0;
	}
	return dash;
}

static int blank(const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (!strchr(" \t\r\n", s[i]))
			return 0;
	return 1;
}

/* Rows of `in` (rendered) each indented by `in_n` bytes of `ind`. */
static void indented(struct buf *out, const char *ind, size_t in_n, const struct buf *in)
{
	size_t i;
	int start = 1;

	for (i = 0; i < in->len; i++) {
		if (start && in->buf[i] != '\n')
			buf_add(out, ind, in_n);
		start = in->buf[i] == '\n';
		buf_addch(out, in->buf[i]);
	}
}

/* One complete line, or a held block, as a document of its own. */
static void render_chunk(struct buf *out, const char *s, size_t len)
{
	struct buf tmp = BUF_INIT;
	size_t in, col = indent_of(s, len, &in);

	if (blank(s, len)) {
		buf_addch(out, '\n');
		return;
	}
	if (col >= 4) {
		/* code, or what continues a list item: as it is */
		buf_add_termsafe(out, s, len, TERMSAFE_MULTILINE);
		return;
	}
	markdown_render(&tmp, s + in, len - in);
	if (!tmp.len)
		/* a link definition alone: md4c keeps it, the person sees it */
		buf_add_termsafe(&tmp, s + in, len - in, TERMSAFE_MULTILINE);
	/* a nested item keeps the indentation the model gave it */
	indented(out, s, in, &tmp);
	buf_release(&tmp);
}

/* A rule: three or more of one of - * _, spaces between. */
static int thematic(const char *s, size_t len)
{
	size_t i, n = 0;

	for (i = 0; i < len; i++) {
		if (s[i] == s[0])
			n++;
		else if (!strchr(" \t\r\n", s[i]))
			return 0;
	}
	return n >= 3;
}

/*
 * The rest of a line whose start was shown as it came: a paragraph's end,
 * parsed alone; a start that would make it a block of its own (a list
 * item, a heading, a quote, a fence, a rule) is escaped.
 */
static void render_rest(struct buf *out, const char *s, size_t len)
{
	struct buf tmp = BUF_INIT, src = BUF_INIT;
	size_t i = 0;

	if (blank(s, len)) {
		buf_addch(out, '\n');
		return;
	}
	while (i < len && s[i] >= '0' && s[i] <= '9')
		i++;
	if (i && i < len && (s[i] == '.' || s[i] == ')')) {
		buf_add(&src, s, i);
		buf_addch(&src, '\\');
		buf_add(&src, s + i, len - i);
	} else {
		char c = s[0];
		int esc = c == '#' || c == '>' || c == '=' ||
			  ((c == '-' || c == '+' || c == '*') && (len < 2 || s[1] == ' ' || s[1] == '\t' ||
								  s[1] == '\n')) ||
			  ((c == '`' || c == '~') && len >= 3 && s[1] == c && s[2] == c) ||
			  ((c == '-' || c == '*' || c == '_') && thematic(s, len));

		if (esc)
			buf_addch(&src, '\\');
		buf_add(&src, s, len);
	}
	markdown_render(&tmp, src.buf, src.len);
	buf_addbuf(out, &tmp);
	buf_release(&tmp);
	buf_release(&src);
}

/* Whether a line that begins with `c` may be shown before it ends: plain text. */
static int plain_start(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80 || c == '"' ||
	       c == '\'' || c == '(';
}

/* The inline characters Markdown gives a meaning. */
static int marks(char c)
{
	return strchr("*_`[]!<>&\\~|", c) != NULL;
}

static void drop(struct markdown_stream *m, size_t n)
{
	memmove(m->pending.buf, m->pending.buf + n, m->pending.len - n);
	buf_setlen(&m->pending, m->pending.len - n);
	m->shown = 0;
	m->held_end = 0;
	m->nl_from = m->nl_from > n ? m->nl_from - n : 0;
	m->plain_to = m->cut = 0;
	m->marked = 0;
}

/* The offset of the end of the complete line at `from` in pending (0: none). */
static size_t line_end(struct markdown_stream *m, size_t from)
{
	const char *nl;

	/* a long line arriving in small pieces is searched once, not at each piece */
	if (from < m->nl_from)
		from = m->nl_from;
	nl = memchr(m->pending.buf + from, '\n', m->pending.len - from);
	if (!nl) {
		m->nl_from = m->pending.len;
		return 0;
	}
	m->nl_from = 0;
	return (size_t)(nl - m->pending.buf) + 1;
}

/* Render the held block (the first `len` bytes of pending) and drop it. */
static void flush_held(struct markdown_stream *m, size_t len, struct buf *out)
{
	render_chunk(out, m->pending.buf, len);
	drop(m, len);
	m->held = HELD_NONE;
}

static void step(struct markdown_stream *m, struct buf *out)
{
	/* the held block's lines were looked at already */
	size_t scan = m->held_end, end;

	while ((end = line_end(m, scan))) {
		const char *l = m->pending.buf + scan;
		size_t n = end - scan;

		switch (m->held) {
		case HELD_FENCE:
			scan = m->held_end = end;
			if (closes_fence(m, l, n)) {
				flush_held(m, end, out);
				scan = 0;
			}
			continue;
		case HELD_ROW:
			if (is_delimiter(l, n)) {
				m->held = HELD_TABLE;
				scan = m->held_end = end;
				continue;
			}
			/* a line with a | that begins no table */
			flush_held(m, scan, out);
			scan = 0;
			continue;
		case HELD_TABLE:
			if (is_row(l, n)) {
				scan = m->held_end = end;
				continue;
			}
			flush_held(m, scan, out);
			scan = 0;
			continue;
		case HELD_NONE:
			break;
		}
		/* a line of its own, at the start of pending */
		if (m->shown) {
			render_rest(out, l + m->shown, n - m->shown);
			drop(m, end);
			continue;
		}
		if ((m->fence_len = fence_at(l, n, &m->fence_ch))) {
			m->held = HELD_FENCE;
			scan = m->held_end = end;
			continue;
		}
		if (is_row(l, n)) {
			m->held = HELD_ROW;
			scan = m->held_end = end;
			continue;
		}
		render_chunk(out, l, n);
		drop(m, end);
	}
	/* the line being written: its plain start, word by word */
	if (m->held == HELD_NONE && m->pending.len && plain_start((unsigned char)m->pending.buf[0])) {
		size_t i;

		for (i = m->plain_to; i < m->pending.len && !m->marked; i++) {
			if (marks(m->pending.buf[i]))
				m->marked = 1;
			else if (m->pending.buf[i] == ' ')
				m->cut = i + 1;
		}
		m->plain_to = i;
		if (m->cut > m->shown) {
			buf_add_termsafe(out, m->pending.buf + m->shown, m->cut - m->shown,
					 TERMSAFE_MULTILINE);
			m->shown = m->cut;
		}
	}
}

void markdown_stream_feed(struct markdown_stream *m, const char *text, size_t len,
			  struct buf *out)
{
	if (!len)
		return;
	buf_add(&m->pending, text, len);
	step(m, out);
}

int markdown_stream_finish(struct markdown_stream *m, struct buf *out)
{
	int open = 0;

	if (m->pending.len && m->pending.buf[m->pending.len - 1] != '\n') {
		/* the last line ends here */
		buf_addch(&m->pending, '\n');
		open = 1;
	}
	step(m, out);
	if (m->held != HELD_NONE)
		flush_held(m, m->pending.len, out);
	if (open && out->len && out->buf[out->len - 1] == '\n')
		buf_setlen(out, out->len - 1);
	else
		open = 0;
	buf_reset(&m->pending);
	m->shown = 0;
	m->held_end = m->nl_from = m->plain_to = m->cut = 0;
	m->marked = 0;
	m->held = HELD_NONE;
	return open;
}
