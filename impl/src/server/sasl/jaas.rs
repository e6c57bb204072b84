//! `sasl.jaas.config` as Kafka reads it (`JaasConfig`: a `StreamTokenizer` over
//! `<loginModuleClass> <controlFlag> (<option>=<value>)*;`, repeated): bytes up to space are white space,
//! `;` and `=` stand alone, `"` and `'` quote (with Java's backslash escapes), `/` starts a comment (`//`,
//! `/* */`, or a lone `/` to the end of the line), everything else forms words.

use std::collections::BTreeMap;

/// Largest `sasl.jaas.config` value read (a handful of options fits many times over).
const MAX_LEN: usize = 64 * 1024;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum JaasError {
    #[error("sasl.jaas.config is longer than {MAX_LEN} bytes")]
    TooLong,
    #[error("Login module not specified in JAAS config")]
    Empty,
    #[error("Login module control flag not specified in JAAS config")]
    NoFlag,
    #[error("Invalid login module control flag '{0}' in JAAS config")]
    BadFlag(String),
    #[error("Value not specified for key '{0}' in JAAS config")]
    NoValue(String),
    #[error("JAAS config entry not terminated by semi-colon")]
    NotTerminated,
    #[error("unterminated quoted string in JAAS config")]
    OpenQuote,
    #[error("unterminated /* comment in JAAS config")]
    OpenComment,
    #[error("expected a login module class name, found '{0}'")]
    NoModule(String),
}

/// One login module entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoginModule {
    pub class: String,
    /// `required`, `requisite`, `sufficient` or `optional`, lower case.
    pub flag: String,
    pub options: BTreeMap<String, String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Token {
    Word(String),
    Quoted(String),
    Semi,
    Eq,
}

impl Token {
    /// The token's text as `StreamTokenizer.sval` has it (`None` for `;` and `=`).
    fn text(&self) -> Option<&str> {
        match self {
            Token::Word(s) | Token::Quoted(s) => Some(s),
            Token::Semi | Token::Eq => None,
        }
    }

    fn shown(&self) -> String {
        match self {
            Token::Word(s) | Token::Quoted(s) => s.clone(),
            Token::Semi => ";".into(),
            Token::Eq => "=".into(),
        }
    }
}

fn tokens(text: &str) -> Result<Vec<Token>, JaasError> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let special = |c: char| c <= ' ' || matches!(c, ';' | '=' | '"' | '\'' | '/');
    while i < chars.len() {
        let c = chars[i];
        match c {
            c if c <= ' ' => i += 1,
            ';' => {
                out.push(Token::Semi);
                i += 1;
            }
            '=' => {
                out.push(Token::Eq);
                i += 1;
            }
            '/' if chars.get(i + 1) == Some(&'*') => {
                let end = (i + 2..chars.len().saturating_sub(1))
                    .find(|&j| chars[j] == '*' && chars[j + 1] == '/')
                    .ok_or(JaasError::OpenComment)?;
                i = end + 2;
            }
            '/' => {
                while i < chars.len() && chars[i] != '\n' && chars[i] != '\r' {
                    i += 1;
                }
            }
            '"' | '\'' => {
                let (value, next) = quoted(&chars, i + 1, c)?;
                out.push(Token::Quoted(value));
                i = next;
            }
            _ => {
                let start = i;
                while i < chars.len() && !special(chars[i]) {
                    i += 1;
                }
                out.push(Token::Word(chars[start..i].iter().collect()));
            }
        }
    }
    Ok(out)
}

/// A quoted string from `start` (after the opening quote) to the closing `quote`, with
/// `StreamTokenizer`'s escapes (`\n \t \r \b \f \a \v`, octal, any other character as itself). As in
/// Java, a line end also closes it.
fn quoted(chars: &[char], start: usize, quote: char) -> Result<(String, usize), JaasError> {
    let mut value = String::new();
    let mut i = start;
    while i < chars.len() {
        match chars[i] {
            c if c == quote => return Ok((value, i + 1)),
            '\n' | '\r' => return Err(JaasError::OpenQuote),
            '\\' => {
                let Some(&e) = chars.get(i + 1) else {
                    return Err(JaasError::OpenQuote);
                };
                i += 2;
                match e {
                    'n' => value.push('\n'),
                    't' => value.push('\t'),
                    'r' => value.push('\r'),
                    'b' => value.push('\u{8}'),
                    'f' => value.push('\u{c}'),
                    'a' => value.push('\u{7}'),
                    'v' => value.push('\u{b}'),
                    '0'..='7' => {
                        // Up to three octal digits (the first at most 3 for three), as Java.
                        let mut n = e.to_digit(8).unwrap_or(0);
                        let max = if e <= '3' { 2 } else { 1 };
                        for _ in 0..max {
                            match chars.get(i).and_then(|c| c.to_digit(8)) {
                                Some(d) => {
                                    n = n * 8 + d;
                                    i += 1;
                                }
                                None => break,
                            }
                        }
                        value.push(char::from_u32(n).unwrap_or('\u{fffd}'));
                    }
                    other => value.push(other),
                }
            }
            c => {
                value.push(c);
                i += 1;
            }
        }
    }
    Err(JaasError::OpenQuote)
}

/// Parses a `sasl.jaas.config` value into its login module entries (at least one).
pub fn parse(text: &str) -> Result<Vec<LoginModule>, JaasError> {
    if text.len() > MAX_LEN {
        return Err(JaasError::TooLong);
    }
    let tokens = tokens(text)?;
    let mut it = tokens.into_iter().peekable();
    let mut modules = Vec::new();
    while let Some(first) = it.next() {
        let class = first
            .text()
            .ok_or_else(|| JaasError::NoModule(first.shown()))?
            .to_string();
        let flag = match it.next() {
            None => return Err(JaasError::NoFlag),
            Some(t) => {
                let flag = t.text().unwrap_or_default().to_ascii_lowercase();
                if !matches!(
                    flag.as_str(),
                    "required" | "requisite" | "sufficient" | "optional"
                ) {
                    return Err(JaasError::BadFlag(t.shown()));
                }
                flag
            }
        };
        let mut options = BTreeMap::new();
        let mut terminated = false;
        while let Some(t) = it.next() {
            if t == Token::Semi {
                terminated = true;
                break;
            }
            let key = t.shown();
            if it.next() != Some(Token::Eq) {
                return Err(JaasError::NoValue(key));
            }
            let value = it
                .next()
                .and_then(|v| v.text().map(str::to_string))
                .ok_or_else(|| JaasError::NoValue(key.clone()))?;
            options.insert(key, value);
        }
        if !terminated {
            return Err(JaasError::NotTerminated);
        }
        modules.push(LoginModule {
            class,
            flag,
            options,
        });
    }
    if modules.is_empty() {
        return Err(JaasError::Empty);
    }
    Ok(modules)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCRAM: &str = "org.apache.kafka.common.security.scram.ScramLoginModule";

    #[test]
    fn kafka_documentation_forms_parse() {
        let m = parse(&format!(
            "{SCRAM} required username=\"alice\" password=\"alice-secret\";"
        ))
        .unwrap();
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].class, SCRAM);
        assert_eq!(m[0].flag, "required");
        assert_eq!(m[0].options["username"], "alice");
        assert_eq!(m[0].options["password"], "alice-secret");
        // Bare words, single quotes, escapes, comments, line breaks, upper-case flags.
        let m = parse(
            "org.apache.kafka.common.security.plain.PlainLoginModule REQUIRED /* who */\n  username=bob\n  \
             password='p\\'w;=d' // trailing\n  ;",
        )
        .unwrap();
        assert_eq!(m[0].flag, "required");
        assert_eq!(m[0].options["username"], "bob");
        assert_eq!(m[0].options["password"], "p'w;=d");
        let two = parse("a required; b optional x=\"1\";").unwrap();
        assert_eq!(two.len(), 2);
        assert_eq!(two[1].options["x"], "1");
        assert_eq!(
            parse("m required k=\"\\101\\t\";").unwrap()[0].options["k"],
            "A\t"
        );
    }

    #[test]
    fn malformed_input_gets_kafkas_messages() {
        assert_eq!(parse(""), Err(JaasError::Empty));
        assert_eq!(parse("  // nothing"), Err(JaasError::Empty));
        assert_eq!(parse(SCRAM), Err(JaasError::NoFlag));
        assert_eq!(
            parse(&format!("{SCRAM} mandatory;")),
            Err(JaasError::BadFlag("mandatory".into()))
        );
        assert_eq!(
            parse(&format!("{SCRAM} required username;")),
            Err(JaasError::NoValue("username".into()))
        );
        assert_eq!(
            parse(&format!("{SCRAM} required username=;")),
            Err(JaasError::NoValue("username".into()))
        );
        assert_eq!(
            parse(&format!("{SCRAM} required username=\"a\"")),
            Err(JaasError::NotTerminated)
        );
        assert_eq!(
            parse(&format!("{SCRAM} required password=\"a;")),
            Err(JaasError::OpenQuote)
        );
        assert_eq!(
            parse(&format!("{SCRAM} required /* a=\"b\";")),
            Err(JaasError::OpenComment)
        );
        assert_eq!(parse("= required;"), Err(JaasError::NoModule("=".into())));
        assert_eq!(parse(&"x".repeat(MAX_LEN + 1)), Err(JaasError::TooLong));
        assert_eq!(
            JaasError::NoValue("username".into()).to_string(),
            "Value not specified for key 'username' in JAAS config"
        );
    }
}
