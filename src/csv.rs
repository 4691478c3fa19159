//! CSV as the reports and statements write it (RFC 4180): fields joined by commas, rows by newlines.

/// One field: as it is, or quoted with its quotes doubled when it holds a comma, a quote or a line break.
pub fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::field;

    #[test]
    fn fields_are_quoted_only_when_they_must_be() {
        assert_eq!(field("TX"), "TX");
        assert_eq!(field(""), "");
        assert_eq!(field("Austin, TX"), "\"Austin, TX\"");
        assert_eq!(field("a \"b\" c"), "\"a \"\"b\"\" c\"");
        assert_eq!(field("two\nlines"), "\"two\nlines\"");
        assert_eq!(field("cr\r"), "\"cr\r\"");
    }
}
