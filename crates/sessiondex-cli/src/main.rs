//! The `sessiondex` command line.
fn main() {}
