//! Characters that must not reach a terminal from another user's input: the C0 controls
//! (U+0000–U+001F, ESC among them), DEL (U+007F), the C1 controls (U+0080–U+009F, which
//! some terminals read as escapes too) and the Unicode bidirectional embeddings,
//! overrides and isolates (U+202A–U+202E, U+2066–U+2069: "Trojan Source", text that
//! displays in another order than it reads).
//!
//! The api refuses them in names and options at input ([`forbidden_char`]); the CLI
//! escapes them in whatever it prints ([`escape`]), for data stored before the check and
//! for fields that may hold them (reasons, paths).

use std::borrow::Cow;

/// Whether `c` is a control or bidirectional-formatting character (see the module).
pub fn is_unsafe(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// The first character of `s` that [`is_unsafe`], if any.
pub fn forbidden_char(s: &str) -> Option<char> {
    s.chars().find(|&c| is_unsafe(c))
}

/// A message for a value holding `c`: `"contains the control character U+001B"`.
pub fn forbidden_message(c: char) -> String {
    let what = if c.is_control() {
        "control character"
    } else {
        "bidirectional formatting character"
    };
    format!(
        "contains the {what} U+{:04X}; names and options are printable text",
        c as u32
    )
}

/// `s` with every [`is_unsafe`] character written as an escape a terminal prints
/// (`\e` for ESC, `\n`, `\t`, `\r`, else `\u{XXXX}`), and backslashes left as they are.
/// Borrowed when nothing needed escaping.
pub fn escape(s: &str) -> Cow<'_, str> {
    if forbidden_char(s).is_none() {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if !is_unsafe(c) {
            out.push(c);
            continue;
        }
        match c {
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\u{1b}' => out.push_str("\\e"),
            _ => out.push_str(&format!("\\u{{{:04X}}}", c as u32)),
        }
    }
    Cow::Owned(out)
}

/// [`escape`] for multi-line text: newlines (and tabs) stay, every other unsafe
/// character is escaped. For whole tables and messages whose own line breaks are meant.
pub fn escape_keep_lines(s: &str) -> Cow<'_, str> {
    if !s.chars().any(|c| is_unsafe(c) && c != '\n' && c != '\t') {
        return Cow::Borrowed(s);
    }
    Cow::Owned(
        s.split('\n')
            .map(|line| {
                line.split('\t')
                    .map(|part| escape(part).into_owned())
                    .collect::<Vec<_>>()
                    .join("\t")
            })
            .collect::<Vec<_>>()
            .join("\n"),
    )
}

/// Job output on its way to a terminal, chunk by chunk (`berth logs`, `berth submit
/// --wait`): line breaks, tabs, carriage returns (progress bars) and colour sequences (SGR,
/// `ESC [ … m`) pass; every other unsafe character or escape sequence (cursor moves, screen
/// clears, window titles, the clipboard through OSC 52 …) is escaped as [`escape`] writes
/// it. A colour sequence split between two chunks is held back until the next one.
#[derive(Debug, Default)]
pub struct TerminalFilter {
    pending: String,
}

/// The longest colour sequence held back for the next chunk, bytes; a longer one is no
/// colour sequence and is escaped.
const MAX_SGR: usize = 64;

impl TerminalFilter {
    /// The filtered text of `chunk` (with what was held back before it).
    pub fn filter(&mut self, chunk: &str) -> String {
        let text = std::mem::take(&mut self.pending) + chunk;
        let mut out = String::with_capacity(text.len());
        let mut rest = text.as_str();
        while let Some(c) = rest.chars().next() {
            if c == '\u{1b}' {
                match sgr_len(rest) {
                    Some(Some(n)) => {
                        out.push_str(&rest[..n]);
                        rest = &rest[n..];
                        continue;
                    }
                    Some(None) if rest.len() <= MAX_SGR => {
                        // Maybe a colour sequence that the next chunk completes.
                        self.pending = rest.to_string();
                        return out;
                    }
                    _ => {}
                }
            }
            if matches!(c, '\n' | '\t' | '\r') || !is_unsafe(c) {
                out.push(c);
            } else {
                out.push_str(&escape(c.encode_utf8(&mut [0; 4])));
            }
            rest = &rest[c.len_utf8()..];
        }
        out
    }

    /// What is still held back (an unfinished escape sequence at the end), escaped.
    pub fn finish(&mut self) -> String {
        escape(&std::mem::take(&mut self.pending)).into_owned()
    }
}

/// For `s` starting with ESC: `Some(Some(n))` when its first `n` bytes are a colour
/// sequence (`ESC [`, digits, `;` or `:`, then `m`), `Some(None)` when `s` could still
/// become one, `None` when it is no colour sequence.
fn sgr_len(s: &str) -> Option<Option<usize>> {
    let bytes = s.as_bytes();
    match bytes.get(1) {
        None => return Some(None),
        Some(b'[') => {}
        Some(_) => return None,
    }
    for (i, b) in bytes.iter().enumerate().skip(2) {
        match b {
            b'0'..=b'9' | b';' | b':' => {}
            b'm' => return Some(Some(i + 1)),
            _ => return None,
        }
    }
    Some(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_c1_and_bidi_are_unsafe_printable_text_is_not() {
        for c in [
            '\0', '\u{1b}', '\n', '\t', '\u{7f}', '\u{9b}', '\u{202E}', '\u{2066}',
        ] {
            assert!(is_unsafe(c), "{c:?}");
        }
        for c in ['a', ' ', 'é', '日', '\u{200F}', '-', '\\'] {
            assert!(!is_unsafe(c), "{c:?}");
        }
        assert_eq!(forbidden_char("train-\u{1b}[2J"), Some('\u{1b}'));
        assert_eq!(forbidden_char("résumé 2"), None);
        assert!(forbidden_message('\u{1b}').contains("U+001B"));
    }

    #[test]
    fn escapes_what_a_terminal_would_interpret() {
        assert!(matches!(escape("plain"), Cow::Borrowed("plain")));
        assert_eq!(escape("a\u{1b}[31mb"), "a\\e[31mb");
        assert_eq!(escape("x\ny\tz\r"), "x\\ny\\tz\\r");
        assert_eq!(escape("\u{9b}2J\u{202E}"), "\\u{009B}2J\\u{202E}");
        assert_eq!(escape_keep_lines("a\u{1b}b\nc\td"), "a\\eb\nc\td");
    }

    #[test]
    fn job_output_keeps_lines_progress_and_colours_and_escapes_the_rest() {
        let mut f = TerminalFilter::default();
        assert_eq!(
            f.filter("epoch 1\r\u{1b}[32m 50%\u{1b}[0m\tok\n"),
            "epoch 1\r\u{1b}[32m 50%\u{1b}[0m\tok\n"
        );
        // A window title (OSC), a screen clear, a cursor move, a C1 CSI, a bidi override.
        assert_eq!(
            f.filter("\u{1b}]0;PWNED\u{7}\u{1b}[2Jhi\u{1b}[1A\u{9b}31m\u{202E}x\n"),
            "\\e]0;PWNED\\u{0007}\\e[2Jhi\\e[1A\\u{009B}31m\\u{202E}x\n"
        );
        // A colour sequence split between chunks passes once whole.
        assert_eq!(f.filter("red \u{1b}[3"), "red ");
        assert_eq!(f.filter("1mtext"), "\u{1b}[31mtext");
        // One that never completes is escaped at the end.
        assert_eq!(f.filter("\u{1b}["), "");
        assert_eq!(f.finish(), "\\e[");
    }
}
