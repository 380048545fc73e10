//! The one canonical tokenizer for queries, BM25 and vocabularies.

/// Splits text into canonical terms.
#[must_use]
pub fn tokenize(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|t| !t.is_empty())
        .map(str::to_lowercase)
        .collect()
}
