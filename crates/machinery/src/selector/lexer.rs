//! The label selector lexer: bytes to tokens, as Go's `labels.Lexer` splits them.

/// One token of a label selector.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Token<'a> {
    /// End of input.
    End,
    /// `(`
    OpenPar,
    /// `)`
    ClosedPar,
    /// `,`
    Comma,
    /// `!`
    DoesNotExist,
    /// `=`
    Equals,
    /// `==`
    DoubleEquals,
    /// `!=`
    NotEquals,
    /// `>`
    GreaterThan,
    /// `<`
    LessThan,
    /// The keyword `in`.
    In,
    /// The keyword `notin`.
    NotIn,
    /// Any other run of bytes that are neither whitespace nor special.
    Identifier(&'a str),
}

impl<'a> Token<'a> {
    /// The token's text, as client-go prints it in messages (`''` for the end).
    pub(super) fn literal(self) -> &'a str {
        match self {
            Token::End => "",
            Token::OpenPar => "(",
            Token::ClosedPar => ")",
            Token::Comma => ",",
            Token::DoesNotExist => "!",
            Token::Equals => "=",
            Token::DoubleEquals => "==",
            Token::NotEquals => "!=",
            Token::GreaterThan => ">",
            Token::LessThan => "<",
            Token::In => "in",
            Token::NotIn => "notin",
            Token::Identifier(text) => text,
        }
    }
}

fn is_whitespace(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\r' | b'\n')
}

fn is_special(byte: u8) -> bool {
    matches!(byte, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

/// Splits the whole input into tokens, ending with [`Token::End`]. Identifiers are maximal
/// runs of non-special, non-whitespace bytes (so `a:b` or `é` is one identifier, rejected
/// later by validation). Two-byte symbols (`==`, `!=`) are taken greedily: `===` is `==`
/// then `=`, `!!` is `!` then `!`.
pub(super) fn tokenize(input: &str) -> Vec<Token<'_>> {
    let bytes = input.as_bytes();
    let mut tokens = Vec::new();
    let mut pos = 0;
    while pos < bytes.len() {
        let byte = bytes[pos];
        if is_whitespace(byte) {
            pos += 1;
            continue;
        }
        let next = bytes.get(pos + 1).copied();
        let (token, len) = match (byte, next) {
            (b'!', Some(b'=')) => (Token::NotEquals, 2),
            (b'=', Some(b'=')) => (Token::DoubleEquals, 2),
            (b'!', _) => (Token::DoesNotExist, 1),
            (b'=', _) => (Token::Equals, 1),
            (b'(', _) => (Token::OpenPar, 1),
            (b')', _) => (Token::ClosedPar, 1),
            (b',', _) => (Token::Comma, 1),
            (b'>', _) => (Token::GreaterThan, 1),
            (b'<', _) => (Token::LessThan, 1),
            _ => {
                let end = bytes[pos..]
                    .iter()
                    .position(|&b| is_whitespace(b) || is_special(b))
                    .map_or(bytes.len(), |offset| pos + offset);
                // Split points are ASCII bytes, so `pos..end` is on char boundaries.
                let text = &input[pos..end];
                let token = match text {
                    "in" => Token::In,
                    "notin" => Token::NotIn,
                    _ => Token::Identifier(text),
                };
                (token, end - pos)
            }
        };
        tokens.push(token);
        pos += len;
    }
    tokens.push(Token::End);
    tokens
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symbols_are_split_greedily_like_client_go() {
        use Token::*;
        let cases: &[(&str, &[Token<'_>])] = &[
            ("a!=b", &[Identifier("a"), NotEquals, Identifier("b"), End]),
            ("===", &[DoubleEquals, Equals, End]),
            ("!!", &[DoesNotExist, DoesNotExist, End]),
            ("=!", &[Equals, DoesNotExist, End]),
            ("<=", &[LessThan, Equals, End]),
            (
                "x in(a ,b)",
                &[
                    Identifier("x"),
                    In,
                    OpenPar,
                    Identifier("a"),
                    Comma,
                    Identifier("b"),
                    ClosedPar,
                    End,
                ],
            ),
            (" \t\r\n", &[End]),
            ("a:b é", &[Identifier("a:b"), Identifier("é"), End]),
            ("notin notinx", &[NotIn, Identifier("notinx"), End]),
        ];
        for (input, want) in cases {
            assert_eq!(tokenize(input), *want, "{input:?}");
        }
    }
}
