//! Java properties files (`--command-config`, as Kafka's tools take it), and a node's TOML tables
//! flattened to the same dotted keys, so both feed one reader of TLS settings (`server::tls`).

use std::path::Path;

use crate::server::tls::Properties;

/// Largest properties file read (a few PEM blocks fit many times over).
const MAX_BYTES: u64 = 1 << 20;

#[derive(Debug, thiserror::Error)]
pub enum PropertiesError {
    #[error("{path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: larger than {MAX_BYTES} bytes")]
    TooLarge { path: String },
    #[error("{path}: line {line}: bad \\u escape")]
    Escape { path: String, line: usize },
}

/// Reads a properties file.
pub fn read(path: &Path) -> Result<Properties, PropertiesError> {
    let shown = path.display().to_string();
    let meta = std::fs::metadata(path).map_err(|source| PropertiesError::Read {
        path: shown.clone(),
        source,
    })?;
    if meta.len() > MAX_BYTES {
        return Err(PropertiesError::TooLarge { path: shown });
    }
    let text = std::fs::read_to_string(path).map_err(|source| PropertiesError::Read {
        path: shown.clone(),
        source,
    })?;
    parse(&text).map_err(|line| PropertiesError::Escape { path: shown, line })
}

/// `java.util.Properties.load` rules: `#`/`!` comments, `=`, `:` or white space between key and value,
/// a line ending in an odd number of `\` continues on the next (whose leading white space is dropped),
/// and `\t \n \r \f \uXXXX` escapes. Err: the line number of a bad `\u` escape.
pub fn parse(text: &str) -> Result<Properties, usize> {
    let mut props = Properties::new();
    let mut lines = text.lines().enumerate();
    while let Some((n, first)) = lines.next() {
        let first = first.trim_start();
        if first.is_empty() || first.starts_with('#') || first.starts_with('!') {
            continue;
        }
        let mut logical = String::new();
        let mut line = first;
        loop {
            let trailing = line.chars().rev().take_while(|c| *c == '\\').count();
            if trailing % 2 == 1 {
                logical.push_str(&line[..line.len() - 1]);
                match lines.next() {
                    Some((_, next)) => line = next.trim_start(),
                    None => break,
                }
            } else {
                logical.push_str(line);
                break;
            }
        }
        let (key, value) = split_key(&logical);
        props.insert(unescape(key).ok_or(n + 1)?, unescape(value).ok_or(n + 1)?);
    }
    Ok(props)
}

/// The raw key and raw value of a logical line.
fn split_key(line: &str) -> (&str, &str) {
    let mut escaped = false;
    for (i, c) in line.char_indices() {
        if escaped {
            escaped = false;
            continue;
        }
        match c {
            '\\' => escaped = true,
            '=' | ':' | ' ' | '\t' | '\u{c}' => {
                let key = &line[..i];
                let mut rest = line[i..].trim_start_matches([' ', '\t', '\u{c}']);
                if c.is_whitespace() || c == '\u{c}' {
                    if let Some(r) = rest.strip_prefix(['=', ':']) {
                        rest = r;
                    }
                } else {
                    rest = &line[i + 1..];
                }
                return (key, rest.trim_start_matches([' ', '\t', '\u{c}']));
            }
            _ => {}
        }
    }
    (line, "")
}

fn unescape(raw: &str) -> Option<String> {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('f') => out.push('\u{c}'),
            Some('u') => {
                let hex: String = chars.by_ref().take(4).collect();
                let code = u32::from_str_radix(&hex, 16)
                    .ok()
                    .filter(|_| hex.len() == 4)?;
                out.push(char::from_u32(code)?);
            }
            Some(other) => out.push(other),
            None => {}
        }
    }
    Some(out)
}

/// Adds a TOML table's leaves under `prefix` as dotted keys (`[ssl] keystore.location = "x"` gives
/// `ssl.keystore.location`); numbers and booleans as their text.
pub fn flatten_toml(prefix: &str, table: &toml::Table, into: &mut Properties) {
    for (key, value) in table {
        let full = format!("{prefix}.{key}");
        match value {
            toml::Value::Table(t) => flatten_toml(&full, t, into),
            toml::Value::String(s) => {
                into.insert(full, s.clone());
            }
            other => {
                into.insert(full, other.to_string());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_properties_rules() {
        let p = parse(
            "# comment\n! also\nsecurity.protocol=SSL\nssl.truststore.location : /a/b\n\
             ssl.endpoint.identification.algorithm=\nkey value with spaces\n\
             ssl.keystore.key=-----BEGIN PRIVATE KEY----- \\\n    QUJD \\\n    -----END PRIVATE KEY-----\n\
             esc=a\\tb\\u0041\n",
        )
        .unwrap();
        assert_eq!(p["security.protocol"], "SSL");
        assert_eq!(p["ssl.truststore.location"], "/a/b");
        assert_eq!(p["ssl.endpoint.identification.algorithm"], "");
        assert_eq!(p["key"], "value with spaces");
        assert_eq!(
            p["ssl.keystore.key"],
            "-----BEGIN PRIVATE KEY----- QUJD -----END PRIVATE KEY-----"
        );
        assert_eq!(p["esc"], "a\tbA");
        assert_eq!(parse("a=\\u00zz"), Err(1));
    }

    #[test]
    fn toml_tables_flatten_to_dotted_keys() {
        let t: toml::Table =
            toml::from_str("keystore.location = \"k\"\n[client]\nauth = \"required\"\n").unwrap();
        let mut p = Properties::new();
        flatten_toml("ssl", &t, &mut p);
        assert_eq!(p["ssl.keystore.location"], "k");
        assert_eq!(p["ssl.client.auth"], "required");
    }
}
