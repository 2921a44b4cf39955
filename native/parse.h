// A strict parser for the lines of a text edge list (spsample convert's streaming reader).
//
// Inputs:  text[0..len), whole lines (the caller cuts chunks at line ends); comment, a byte
//          (0: none) that starts a comment running to the end of its line; delim, the column
//          separator byte, or 0 for runs of spaces and tabs.
// Grammar: a line is blank, or a comment, or [blanks] ID SEP ID [SEP FIELD]* [blanks] [comment]
//          where ID is 1..18 decimal digits and FIELD any bytes but SEP, comment and line ends;
//          lines end with "\n" or "\r\n" (or the end of the text). Blanks are spaces and tabs.
// Outputs: out[2 * i], out[2 * i + 1] = the first two columns of the i-th edge line; returns the
//          number of edge lines, or -1 - (offset of the first line that does not match the
//          grammar). The caller then parses the chunk with numpy.loadtxt, which either accepts
//          what this refuses (signs, other number forms) or reports the error in its words.
// Complexity: one pass over the bytes; out needs room for 2 * (number of lines) values.
#ifndef SPSAMPLE_PARSE_H
#define SPSAMPLE_PARSE_H

#include <cstdint>

namespace spsample {

inline bool is_blank(char c) { return c == ' ' || c == '\t'; }

// Parse 1..18 digits at text[p]; advance p. False when there are none or too many.
inline bool parse_id(const char* text, int64_t len, int64_t& p, int64_t& value) {
    int64_t v = 0, digits = 0;
    while (p < len && text[p] >= '0' && text[p] <= '9') {
        v = v * 10 + (text[p] - '0');
        ++p;
        if (++digits > 18) return false;
    }
    value = v;
    return digits > 0;
}

// Skip one separator at text[p]: a run of blanks (delim 0) or blanks, delim, blanks.
inline bool skip_separator(const char* text, int64_t len, int64_t& p, char delim) {
    const int64_t start = p;
    while (p < len && is_blank(text[p])) ++p;
    if (delim == 0) return p > start;
    if (p >= len || text[p] != delim) return false;
    ++p;
    while (p < len && is_blank(text[p])) ++p;
    return true;
}

inline bool at_line_end(const char* text, int64_t len, int64_t p, char comment) {
    return p >= len || text[p] == '\n' || text[p] == '\r' || (comment && text[p] == comment);
}

// Parse one line starting at p (see the grammar); adds its edge to out. Advances p past it.
inline bool parse_line(const char* text, int64_t len, int64_t& p, char comment, char delim,
                       int64_t* out, int64_t& edges) {
    while (p < len && is_blank(text[p])) ++p;
    if (!at_line_end(text, len, p, comment)) {
        int64_t u = 0, v = 0;
        if (!parse_id(text, len, p, u) || !skip_separator(text, len, p, delim) ||
            !parse_id(text, len, p, v))
            return false;
        for (;;) {                               // further columns, unread
            const int64_t q = p;
            while (p < len && is_blank(text[p])) ++p;
            if (at_line_end(text, len, p, comment)) break;
            p = q;
            if (!skip_separator(text, len, p, delim)) return false;
            while (p < len && !is_blank(text[p]) && text[p] != delim && text[p] != '\n' &&
                   text[p] != '\r' && !(comment && text[p] == comment))
                ++p;
        }
        out[2 * edges] = u;
        out[2 * edges + 1] = v;
        ++edges;
    }
    if (p < len && comment && text[p] == comment)
        while (p < len && text[p] != '\n') ++p;
    if (p < len && text[p] == '\r') {
        ++p;
        if (p < len && text[p] != '\n') return false;
    }
    if (p < len) ++p;                            // the '\n'
    return true;
}

inline int64_t parse_edge_lines(const char* text, int64_t len, char comment, char delim,
                                int64_t* out) {
    int64_t p = 0, edges = 0;
    while (p < len) {
        const int64_t line = p;
        if (!parse_line(text, len, p, comment, delim, out, edges)) return -1 - line;
    }
    return edges;
}

}  // namespace spsample

#endif  // SPSAMPLE_PARSE_H
