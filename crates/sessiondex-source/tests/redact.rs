//! Secrets at ingest: every credential shape is replaced, clean text is left alone, redaction
//! is idempotent and never panics, and reading applies it to every text a record carries
//! unless `redact_secrets` is off.

use std::borrow::Cow;

use proptest::prelude::*;
use sessiondex_source::redact::{find, redact};
use sessiondex_source::{read_bytes, resume, ReadOptions, SecretKind};

/// One synthetic secret of every kind (none of them is a real credential): the text as
/// planted, its distinctive body (what must not survive), and the kind it is reported as.
pub fn planted() -> Vec<(&'static str, &'static str, SecretKind)> {
    vec![
        ("AKIAZQ3XAMPLE7KEYID9", "AKIAZQ3XAMPLE7KEYID9", SecretKind::AwsAccessKeyId),
        (
            "aws_secret_access_key = Zq8sYnThEtIcSeCrEtKeY0123456789abcdEFGHi",
            "Zq8sYnThEtIcSeCrEtKeY0123456789abcdEFGHi",
            SecretKind::AwsSecretAccessKey,
        ),
        (
            "ghp_SyNtHeTiC0123456789abcdefABCDEFghijKL",
            "SyNtHeTiC0123456789abcdefABCDEFghijKL",
            SecretKind::GithubToken,
        ),
        (
            "github_pat_11SYNTHETIC0_abcdefghijKLMNOPQRSTuv0123456789",
            "abcdefghijKLMNOPQRSTuv0123456789",
            SecretKind::GithubToken,
        ),
        ("glpat-SyNtHeTiC0123456789xyz", "SyNtHeTiC0123456789xyz", SecretKind::GitlabToken),
        ("xoxb-1234567890-SyNtHeTiCtOkEn", "SyNtHeTiCtOkEn", SecretKind::SlackToken),
        (
            "https://hooks.slack.com/services/T00SYNTH/B00SYNTH/SyNtHeTiCwEbHoOk0123",
            "SyNtHeTiCwEbHoOk0123",
            SecretKind::SlackWebhook,
        ),
        (
            "sk-proj-SyNtHeTiC0123456789openaiKEYabcdef",
            "SyNtHeTiC0123456789openaiKEYabcdef",
            SecretKind::OpenaiKey,
        ),
        (
            "sk-ant-api03-SyNtHeTiC0123456789anthropicKEY_abc-def",
            "SyNtHeTiC0123456789anthropicKEY",
            SecretKind::AnthropicKey,
        ),
        (
            "-----BEGIN RSA PRIVATE KEY-----\nMIIEsynthetic0123456789keybody\n-----END RSA PRIVATE KEY-----",
            "MIIEsynthetic0123456789keybody",
            SecretKind::PrivateKey,
        ),
        (
            "Authorization: Bearer SyNtHeTiC0123456789bearerTOKEN",
            "SyNtHeTiC0123456789bearerTOKEN",
            SecretKind::BearerToken,
        ),
        (
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJzeW50aGV0aWMifQ.SyNtHeTiCsIgNaTuRe0123",
            "eyJzdWIiOiJzeW50aGV0aWMifQ",
            SecretKind::Jwt,
        ),
        (
            "postgres://admin:SyNtHeTiCpAsSw0rd@db.example.com:5432/app",
            "SyNtHeTiCpAsSw0rd",
            SecretKind::UrlPassword,
        ),
    ]
}

#[test]
fn every_kind_is_replaced_alone_and_in_prose() {
    let mut kinds = std::collections::HashSet::new();
    for (secret, _, kind) in planted() {
        kinds.insert(kind);
        let f = find(secret);
        assert_eq!(f.len(), 1, "{secret}: {f:?}");
        assert_eq!(f[0].kind, kind, "{secret}");
        let marker = format!("[redacted:{}]", kind.as_str());
        let prose = format!("before ({secret}) after");
        let r = redact(&prose);
        assert!(r.contains(&marker), "{r}");
        assert!(r.starts_with("before (") && r.ends_with(") after"), "{r}");
        // Redacting again changes nothing.
        assert!(matches!(redact(&r), Cow::Borrowed(_)), "{r}");
    }
    assert_eq!(kinds.len(), SecretKind::ALL.len());
}

#[test]
fn names_and_context_are_kept_where_only_the_value_is_secret() {
    assert_eq!(
        redact("export AWS_SECRET_ACCESS_KEY=Zq8sYnThEtIcSeCrEtKeY0123456789abcdEFGHi;"),
        "export AWS_SECRET_ACCESS_KEY=[redacted:aws_secret_access_key];"
    );
    assert_eq!(
        redact(r#"{"SecretAccessKey": "Zq8sYnThEtIcSeCrEtKeY0123456789abcdEFGHi"}"#),
        r#"{"SecretAccessKey": "[redacted:aws_secret_access_key]"}"#
    );
    assert_eq!(
        redact("curl -H 'Authorization: Bearer abc123def456ghi789jk' https://x"),
        "curl -H 'Authorization: Bearer [redacted:bearer_token]' https://x"
    );
    assert_eq!(
        redact("git clone https://bob:hunter2hunter@github.com/o/r.git"),
        "git clone https://bob:[redacted:url_password]@github.com/o/r.git"
    );
    assert_eq!(
        redact("hook: https://hooks.slack.com/services/T000/B000/XXXXXXXXXXXX done"),
        "hook: [redacted:slack_webhook] done"
    );
    // A key block cut off before its end line is redacted to the end of the text.
    assert_eq!(
        redact("key:\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXkt"),
        "key:\n[redacted:private_key]"
    );
    // In JSON-escaped tool arguments too.
    assert_eq!(
        redact(
            r#"{"command":"echo -----BEGIN EC PRIVATE KEY-----\nMHcC\n-----END EC PRIVATE KEY----- > k"}"#
        ),
        r#"{"command":"echo [redacted:private_key] > k"}"#
    );
}

#[test]
fn look_alikes_in_ordinary_text_are_left_alone() {
    for clean in [
        "the task-runner and risk-assessment-for-the-quarter-2026 reports",
        "sk-learn is not a key; sk-short1",
        "a bearer of bad news, Bearer $TOKEN, bearer <token>",
        "http://localhost:8080/path and ssh://git@github.com:22/o/r",
        "AKIA is a prefix; AKIAIOSFODNN7EXAMPLEX is too long",
        "ghp_short and gho_ and github_pat_x",
        "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----",
        "eyJhbGciOiJIUzI1NiJ9 alone is a header, not a token",
        "xoxb- and glpat-short and hooks.slack.com/services/",
        "user:pass@host without a scheme; mailto:me@example.com",
        "日本語のテキスト sk-ünïcödé",
    ] {
        assert!(
            matches!(redact(clean), Cow::Borrowed(_)),
            "{clean}: {:?}",
            find(clean)
        );
    }
}

#[test]
fn long_runs_of_near_misses_stay_linear() {
    // Triggers inside one long run of token characters: each run is measured once.
    for unit in [
        "sk-",
        "github_pat_",
        "glpat-",
        "xoxb-",
        "eyJ-",
        "-----BEGIN X",
        "a://b:c",
    ] {
        let s = unit.repeat(200_000);
        let _ = redact(&s);
    }
}

/// A log with one secret of every kind in user text, assistant text, tool input and tool
/// output, and one in the session title.
fn session_log(secret: &str) -> String {
    let esc = |s: &str| serde_json::to_string(s).unwrap();
    let args = serde_json::json!({"command": format!("deploy --token {secret}")}).to_string();
    format!(
        concat!(
            r#"{{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00Z","cwd":"/p"}}"#,
            "\n",
            r#"{{"type":"session_info","id":"t","parentId":null,"timestamp":"2026-01-01T00:00:00Z","name":{title}}}"#,
            "\n",
            r#"{{"type":"message","id":"a","parentId":"t","timestamp":"2026-01-01T00:00:01Z","message":{{"role":"user","content":{user}}}}}"#,
            "\n",
            r#"{{"type":"message","id":"b","parentId":"a","timestamp":"2026-01-01T00:00:02Z","message":{{"role":"assistant","content":[{{"type":"thinking","thinking":{user}}},{{"type":"text","text":{user}}},{{"type":"toolCall","id":"c1","name":"bash","arguments":{args}}}]}}}}"#,
            "\n",
            r#"{{"type":"message","id":"c","parentId":"b","timestamp":"2026-01-01T00:00:03Z","message":{{"role":"toolResult","toolCallId":"c1","toolName":"bash","content":[{{"type":"text","text":{user}}}],"isError":false}}}}"#,
            "\n",
        ),
        title = esc(&format!("title {secret}")),
        user = esc(&format!("the value is {secret} ok")),
        args = args,
    )
}

#[test]
fn reading_redacts_every_text_and_the_title_unless_off() {
    for (secret, body, kind) in planted() {
        let log = session_log(secret);
        let marker = format!("[redacted:{}]", kind.as_str());
        let s = read_bytes("s.jsonl", log.as_bytes(), &ReadOptions::default()).unwrap();
        let all = serde_json::to_string(&s).unwrap();
        assert!(!all.contains(body), "{secret} survives: {all}");
        assert!(s.meta.title.as_deref().unwrap().contains(&marker));
        let texts: Vec<&str> = s.records.iter().map(|r| r.text.as_str()).collect();
        assert!(
            texts.iter().filter(|t| t.contains(&marker)).count() >= 4,
            "{texts:?}"
        );
        assert!(s
            .records
            .iter()
            .any(|r| r.thinking.as_deref().is_some_and(|t| t.contains(&marker))));

        let off = ReadOptions {
            redact_secrets: false,
            ..ReadOptions::default()
        };
        let raw = read_bytes("s.jsonl", log.as_bytes(), &off).unwrap();
        assert!(raw.meta.title.as_deref().unwrap().contains(secret));
        assert!(raw.records.iter().any(|r| r.text.contains(secret)));

        // Resuming after any line gives what a full read gives.
        let opts = ReadOptions::default();
        for cut in log.match_indices('\n').map(|(i, _)| i + 1) {
            let prev = read_bytes("s.jsonl", &log.as_bytes()[..cut], &opts).unwrap();
            let from = usize::try_from(prev.coverage.complete_bytes).unwrap();
            let now = resume(prev, &log.as_bytes()[from..], &opts).unwrap();
            assert_eq!(now, s, "{secret} cut at {cut}");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Any text: no panic, a fixed point after one pass, and clean text borrowed.
    #[test]
    fn never_panics_and_is_idempotent(s in "(?s).{0,400}") {
        let once = redact(&s).into_owned();
        prop_assert_eq!(redact(&once).into_owned(), once.clone());
    }

    /// Random bytes of the trigger alphabet, where near misses are most likely.
    #[test]
    fn trigger_soup_never_panics(s in "[AKISkgxhpbeyJ_:/@ .=-]{0,300}") {
        let once = redact(&s).into_owned();
        prop_assert_eq!(redact(&once).into_owned(), once.clone());
    }

    /// A planted secret in random text is always gone after redaction, whatever surrounds it
    /// (separated by a space, as credentials are in text).
    #[test]
    fn planted_secret_is_gone(pre in "[a-z ]{0,40}", post in "[a-z ]{0,40}", k in 0usize..13) {
        let (secret, body, kind) = planted()[k];
        let text = format!("{pre} {secret} {post}");
        let r = redact(&text);
        let marker = format!("[redacted:{}]", kind.as_str());
        prop_assert!(r.contains(&marker), "{}", r);
        prop_assert!(!r.contains(body), "{}", r);
    }
}
