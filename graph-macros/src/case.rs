/// `ToolCall` -> `tool_call`, `HTTPRequest` -> `http_request`, `Step2Done` -> `step2_done`.
///
/// Word boundaries follow heck's `ToSnakeCase`: a lowercase letter or digit followed by
/// an uppercase one, and the last capital of an acronym that starts a new word.
pub(crate) fn to_snake_case(name: &str) -> String {
    let chars: Vec<char> = name.chars().collect();
    let mut out = String::with_capacity(name.len() + 4);
    for (i, &c) in chars.iter().enumerate() {
        if c.is_uppercase() {
            let prev = i.checked_sub(1).map(|p| chars[p]);
            let next = chars.get(i + 1).copied();
            let boundary = match prev {
                None | Some('_') => false,
                Some(p) if p.is_lowercase() || p.is_ascii_digit() => true,
                Some(p) if p.is_uppercase() => next.is_some_and(char::is_lowercase),
                Some(_) => false,
            };
            if boundary {
                out.push('_');
            }
            out.extend(c.to_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::to_snake_case;

    #[test]
    fn converts_camel_case() {
        for (input, expected) in [
            ("Tools", "tools"),
            ("ToolCall", "tool_call"),
            ("CallLlmAgain", "call_llm_again"),
            ("HTTPRequest", "http_request"),
            ("GetHTTP", "get_http"),
            ("Step2Done", "step2_done"),
            ("V2", "v2"),
            ("A", "a"),
            ("AB", "ab"),
            ("already_snake", "already_snake"),
            ("Mixed_Case", "mixed_case"),
            ("Étape", "étape"),
        ] {
            assert_eq!(to_snake_case(input), expected, "{input}");
        }
    }
}
