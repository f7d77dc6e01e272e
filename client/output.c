/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <inttypes.h>
#include <langinfo.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "output.h"

#include "common/utf8.h"
#include "common/util.h"

bool output_want_colour(int fd)
{
        const char *e;

        /* https://no-color.org: present and not empty disables colour. */
        e = getenv("NO_COLOR");
        if (!isempty(e))
                return false;
        e = getenv("TERM");
        if (streq_ptr(e, "dumb"))
                return false;
        return isatty(fd) == 1;
}

bool output_want_utf8(void)
{
        const char *cs = nl_langinfo(CODESET);

        return cs && (strcasecmp(cs, "UTF-8") == 0 || strcasecmp(cs, "utf8") == 0);
}

/* The same arithmetic as util-linux's size_to_human_string(), so that our
 * SIZE column matches lsblk's digit for digit. */
char *output_size_human(uint64_t bytes)
{
        static const char letters[] = "BKMGTPE";
        uint64_t dec, frac = 0;
        char *s = NULL;
        int exp, shift;

        for (shift = 10; shift <= 60; shift += 10)
                if (bytes < (1ULL << shift))
                        break;
        exp = shift - 10;

        dec = exp ? bytes >> exp : bytes;
        if (exp) {
                frac = bytes & ((1ULL << exp) - 1);
                if (frac) {
                        if (frac >= UINT64_MAX / 1000)
                                frac = ((frac / 1024) * 1000) / (1ULL << (exp - 10));
                        else
                                frac = (frac * 1000) / (1ULL << exp);
                        /* Round 4.156 to 4.2. */
                        frac = (frac + 50) / 100;
                        if (frac == 10) {
                                dec++;
                                frac = 0;
                        }
                }
        }

        if (frac) {
                if (asprintf(&s, "%" PRIu64 ".%" PRIu64 "%c", dec, frac, letters[exp / 10]) < 0)
                        return NULL;
        } else {
                if (asprintf(&s, "%" PRIu64 "%c", dec, letters[exp / 10]) < 0)
                        return NULL;
        }
        return s;
}

size_t output_width(const char *s)
{
        size_t n = 0;

        for (; *s; s++)
                if (((unsigned char) *s & 0xC0) != 0x80)
                        n++;
        return n;
}

struct Table {
        const TableColumn *columns;
        size_t n_columns;
        char **cells; /* n_rows × n_columns */
        size_t n_rows;
        size_t allocated; /* cells */
};

Table *table_new(const TableColumn *columns, size_t n_columns)
{
        Table *t = calloc(1, sizeof(*t));

        if (!t)
                return NULL;
        t->columns = columns;
        t->n_columns = n_columns;
        return t;
}

Table *table_free(Table *t)
{
        if (!t)
                return NULL;
        for (size_t i = 0; i < t->n_rows * t->n_columns; i++)
                free(t->cells[i]);
        free(t->cells);
        free(t);
        return NULL;
}

/* A control character, C0, DEL or C1 (two bytes in UTF-8): its length in bytes, else 0. */
static size_t control_length(const char *p)
{
        if (char_is_control(p[0]))
                return 1;
        if ((unsigned char) p[0] == 0xc2 && (unsigned char) p[1] >= 0x80 && (unsigned char) p[1] <= 0x9f)
                return 2;
        return 0;
}

/* As lsblk prints a cell: each byte of a control character as \xNN.  A vendor's or model's text
 * can hold a tab or an escape sequence, which must neither shift the columns nor drive the
 * terminal. */
static char *cell_encode(const char *s)
{
        size_t n = 0, k;
        char *out, *o;

        for (const char *p = s; *p; p += k ? k : 1)
                n += (k = control_length(p)) ? 4 * k : 1;
        out = o = malloc(n + 1);
        if (!out)
                return NULL;
        for (const char *p = s; *p;) {
                k = control_length(p);
                if (!k)
                        *o++ = *p++;
                for (; k > 0; k--)
                        o += sprintf(o, "\\x%02x", (unsigned char) *p++);
        }
        *o = '\0';
        return out;
}

int table_add_row(Table *t, const char *const *cells)
{
        if (GREEDY_REALLOC(t->cells, t->allocated, (t->n_rows + 1) * t->n_columns) < 0)
                return -ENOMEM;

        char **row = t->cells + t->n_rows * t->n_columns;
        for (size_t i = 0; i < t->n_columns; i++) {
                row[i] = cell_encode(strempty(cells[i]));
                if (!row[i]) {
                        while (i > 0)
                                free(row[--i]);
                        return -ENOMEM;
                }
        }
        t->n_rows++;
        return 0;
}

static void table_print_cell(FILE *f, const char *s, size_t width, Align align, bool pad)
{
        size_t w = output_width(s);
        size_t fill = width > w ? width - w : 0;

        if (align == ALIGN_RIGHT)
                fprintf(f, "%*s", (int) fill, "");
        fputs(s, f);
        if (align == ALIGN_LEFT && pad)
                fprintf(f, "%*s", (int) fill, "");
}

void table_print(const Table *t, FILE *f, bool legend, bool colour)
{
        _cleanup_(freep) size_t *widths = NULL;

        widths = calloc(t->n_columns, sizeof(size_t));
        if (!widths)
                return;

        for (size_t c = 0; c < t->n_columns; c++) {
                /* The heading counts even when not printed, as in lsblk: --no-legend must not
                 * squeeze RO to one character. */
                size_t header = output_width(t->columns[c].header), hint = t->columns[c].width_hint;
                size_t cells = 0;

                for (size_t r = 0; r < t->n_rows; r++) {
                        size_t w = output_width(t->cells[r * t->n_columns + c]);
                        if (w > cells)
                                cells = w;
                }
                /* libsmartcols' rule: cells narrower than the heading take its width; else a
                 * hint wider than the cells (and so than the heading) is the width (lsblk's SIZE
                 * is 5 wide for "256G", 4 for "64M"). */
                if (cells < header)
                        widths[c] = header;
                else if (cells < hint)
                        widths[c] = hint;
                else
                        widths[c] = cells;
        }

        /* A right-aligned last column still needs its padding. */
        if (legend) {
                fputs(output_colour(colour, ANSI_BOLD), f);
                for (size_t c = 0; c < t->n_columns; c++) {
                        bool last = c + 1 == t->n_columns;
                        table_print_cell(f, t->columns[c].header, widths[c], t->columns[c].align, !last);
                        if (!last)
                                fputc(' ', f);
                }
                fputs(output_colour(colour, ANSI_RESET), f);
                fputc('\n', f);
        }

        for (size_t r = 0; r < t->n_rows; r++) {
                size_t end = t->n_columns;

                /* No trailing blanks: drop empty cells at the end, right-aligned ones too (lsblk
                 * prints only its separator for them: START of a disk, RA of a partition). */
                while (end > 1 && t->cells[r * t->n_columns + end - 1][0] == '\0')
                        end--;

                for (size_t c = 0; c < end; c++) {
                        bool last = c + 1 == end;
                        table_print_cell(f, t->cells[r * t->n_columns + c], widths[c], t->columns[c].align,
                                         !last);
                        if (!last)
                                fputc(' ', f);
                }
                fputc('\n', f);
        }
}

void output_json(json_object *j, bool pretty)
{
        int flags = pretty ? OUTPUT_JSON_PRETTY : JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE;

        fputs(json_object_to_json_string_ext(j, flags), stdout);
        fputc('\n', stdout);
}

/* Text as it is, or (escape) with control characters as \xNN, as a table cell shows them. */
static void output_text(FILE *f, const char *s, bool escape)
{
        _cleanup_(freep) char *e = escape ? cell_encode(s) : NULL;

        fputs(e ?: s, f);
}

void output_line(const char *fmt, ...)
{
        _cleanup_(freep) char *line = NULL;
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vasprintf(&line, fmt, ap);
        va_end(ap);
        if (r < 0)
                return;
        output_text(stdout, line, true);
        fputc('\n', stdout);
}

/* A JSON null (NULL) prints as nothing, a string as its text, anything else as JSON. */
static void output_scalar(FILE *f, json_object *v, bool escape)
{
        if (!v)
                return;
        if (json_object_is_type(v, json_type_string))
                output_text(f, json_object_get_string(v), escape);
        else
                fputs(json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN |
                                                                        JSON_C_TO_STRING_NOSLASHESCAPE),
                      f);
}

bool output_value_is_empty(json_object *v)
{
        if (!v)
                return true;
        if (json_object_is_type(v, json_type_string))
                return json_object_get_string_len(v) == 0;
        if (json_object_is_type(v, json_type_array))
                return json_object_array_length(v) == 0;
        if (json_object_is_type(v, json_type_object))
                return json_object_object_length(v) == 0;
        return false;
}

void output_value(FILE *f, json_object *v, size_t indent)
{
        output_value_ext(f, v, indent, false);
}

void output_value_ext(FILE *f, json_object *v, size_t indent, bool escape)
{
        bool first = true;

        if (json_object_is_type(v, json_type_array)) {
                size_t n = json_object_array_length(v);

                for (size_t i = 0; i < n; i++) {
                        if (!first)
                                fprintf(f, "\n%*s", (int) indent, "");
                        output_scalar(f, json_object_array_get_idx(v, i), escape);
                        first = false;
                }
                fputc('\n', f);
                return;
        }

        if (json_object_is_type(v, json_type_object)) {
                json_object_object_foreach(v, key, val) {
                        if (!first)
                                fprintf(f, "\n%*s", (int) indent, "");
                        output_text(f, key, escape);
                        fputc('=', f);
                        output_scalar(f, val, escape);
                        first = false;
                }
                fputc('\n', f);
                return;
        }

        output_scalar(f, v, escape);
        fputc('\n', f);
}
