//! Output caps: keeping the head and tail of long output with the cut marked.

use std::collections::VecDeque;

/// Collects a byte stream, keeping at most `head` bytes from the start and
/// `tail` bytes from the end, and counting what was dropped in between.
///
/// ```
/// let mut out = loopwright_tools::HeadTail::new(4, 4);
/// out.push(b"0123456789abcdef");
/// let text = out.render();
/// assert!(text.starts_with("0123"));
/// assert!(text.ends_with("cdef"));
/// assert!(text.contains("8 bytes omitted"));
/// ```
#[derive(Debug, Clone)]
pub struct HeadTail {
    head_limit: usize,
    tail_limit: usize,
    head: Vec<u8>,
    tail: VecDeque<u8>,
    total: u64,
}

impl HeadTail {
    /// A collector keeping `head` leading and `tail` trailing bytes.
    pub fn new(head: usize, tail: usize) -> Self {
        Self {
            head_limit: head,
            tail_limit: tail,
            head: Vec::new(),
            tail: VecDeque::new(),
            total: 0,
        }
    }

    /// Add bytes.
    pub fn push(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len() as u64;
        let room = self.head_limit.saturating_sub(self.head.len());
        let into_head = room.min(bytes.len());
        self.head.extend_from_slice(&bytes[..into_head]);
        bytes = &bytes[into_head..];
        if bytes.len() > self.tail_limit {
            bytes = &bytes[bytes.len() - self.tail_limit..];
        }
        let overflow = (self.tail.len() + bytes.len()).saturating_sub(self.tail_limit);
        self.tail.drain(..overflow.min(self.tail.len()));
        self.tail.extend(bytes);
    }

    /// Total bytes pushed.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Bytes dropped between head and tail.
    pub fn omitted(&self) -> u64 {
        self.total - self.head.len() as u64 - self.tail.len() as u64
    }

    /// The kept text (lossy UTF-8), with a marker where bytes were cut.
    pub fn render(&self) -> String {
        let head = String::from_utf8_lossy(&self.head);
        let tail: Vec<u8> = self.tail.iter().copied().collect();
        let tail = String::from_utf8_lossy(&tail);
        match self.omitted() {
            0 => format!("{head}{tail}"),
            n => format!("{head}\n[... {n} bytes omitted ...]\n{tail}"),
        }
    }
}

/// Cut `line` to at most `max_chars` characters, marking the cut.
pub(crate) fn cut_line(line: &str, max_chars: usize) -> String {
    match line.char_indices().nth(max_chars) {
        None => line.to_owned(),
        Some((at, _)) => {
            let dropped = line[at..].chars().count();
            format!("{}… [{dropped} more characters cut]", &line[..at])
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn short_output_is_kept_whole() {
        let mut h = HeadTail::new(10, 10);
        h.push(b"hello ");
        h.push(b"world");
        assert_eq!(h.render(), "hello world");
        assert_eq!(h.omitted(), 0);
    }

    #[test]
    fn long_output_keeps_head_and_tail_across_pushes() {
        let mut h = HeadTail::new(3, 3);
        for chunk in [b"ab".as_slice(), b"cdef", b"g", b"hij"] {
            h.push(chunk);
        }
        assert_eq!(h.total(), 10);
        assert_eq!(h.omitted(), 4);
        assert_eq!(h.render(), "abc\n[... 4 bytes omitted ...]\nhij");
    }

    #[test]
    fn cut_line_marks_the_cut() {
        assert_eq!(cut_line("abc", 3), "abc");
        assert_eq!(cut_line("abcdé", 3), "abc… [2 more characters cut]");
    }
}
