/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <json-c/json.h>

#include "common/util.h"

/* Colour only on a terminal, never with NO_COLOR or TERM=dumb. */
bool output_want_colour(int fd);
/* Tree glyphs in UTF-8 only where the locale speaks it. */
bool output_want_utf8(void);

#define ANSI_BOLD "\033[1m"
#define ANSI_GREY "\033[2m"
#define ANSI_RED "\033[31m"
#define ANSI_GREEN "\033[32m"
#define ANSI_YELLOW "\033[33m"
#define ANSI_BLUE "\033[34m"
#define ANSI_RESET "\033[0m"

/* Returns on when colour is wanted, "" otherwise. */
static inline const char *output_colour(bool colour, const char *on)
{
        return colour ? on : "";
}

/* lsblk's human size: 0B, 1K, 1.5G (one decimal, binary units). */
char *output_size_human(uint64_t bytes);

/* A table with aligned columns; the last column gets no padding. */
typedef enum Align {
        ALIGN_LEFT,
        ALIGN_RIGHT,
} Align;

typedef struct TableColumn {
        const char *header;
        Align align;
        /* libsmartcols' width hint (lsblk's column table): where the widest cell is at least as
         * wide as the heading but narrower than this, the column is this wide; 0: none. */
        size_t width_hint;
} TableColumn;

typedef struct Table Table;

Table *table_new(const TableColumn *columns, size_t n_columns);
Table *table_free(Table *t);
/* Adds a row of n_columns cells, copied; NULL prints as "". */
int table_add_row(Table *t, const char *const *cells);
void table_print(const Table *t, FILE *f, bool legend, bool colour);

/* json-c's flags for output_json()'s pretty form. */
#define OUTPUT_JSON_PRETTY (JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE)

/* Prints JSON (pretty, or one line for streams) followed by a newline. */
void output_json(json_object *j, bool pretty);

/*
 * Prints a property value for humans: scalars as they are, arrays one item
 * per line, dictionaries KEY=VALUE per line.  Continuation lines are
 * indented by indent columns.
 */
void output_value(FILE *f, json_object *v, size_t indent);
/* The same, with escape: control characters as \xNN (each byte), as table cells show them, so
 * that a value can neither break the layout nor drive the terminal. */
void output_value_ext(FILE *f, json_object *v, size_t indent, bool escape);

/* printf() of one line (fmt without its newline) with control characters as \xNN, as table cells
 * show them: a value from the model can neither split the line nor drive the terminal. */
void output_line(const char *fmt, ...) _printf_(1, 2);

/* "", [] or {}: nothing to print. */
bool output_value_is_empty(json_object *v);

/* Display width of a UTF-8 string (code points; our glyphs are narrow). */
size_t output_width(const char *s);
