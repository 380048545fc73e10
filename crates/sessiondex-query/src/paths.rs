//! Paths as the index names them.

use std::path::{Component, Path, PathBuf};

/// `path` made absolute from the current directory, without `.` and `..`: `examples/sessions`
/// run from `/src/app` is `/src/app/examples/sessions`, `/a/b/../c` is `/a/c`. A `..` takes
/// off the component before it, unless that is a symbolic link: then the path up to the link
/// is resolved first (`a/link/..` is the directory holding the link's target, as the file
/// system reads it). Other links are kept as spelled. The facade's `Memory` keys its index by
/// the source paths this gives, so that the same files reached from another current
/// directory, or spelled another way, are the same sessions, and a follow call copied from one
/// directory works from any other.
///
/// # Errors
///
/// When `path` is empty or relative and the current directory cannot be read.
pub fn absolute_path(path: &Path) -> std::io::Result<PathBuf> {
    let abs = std::path::absolute(path)?;
    let mut out = PathBuf::new();
    for c in abs.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if out
                    .symlink_metadata()
                    .is_ok_and(|m| m.file_type().is_symlink())
                {
                    if let Ok(real) = std::fs::canonicalize(&out) {
                        out = real;
                    }
                }
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absolute_paths_resolve_dots_in_their_text() {
        let cwd = std::env::current_dir().unwrap();
        let p = |s: &str| absolute_path(Path::new(s)).unwrap();
        assert_eq!(p("/a/b/../c/./d/"), PathBuf::from("/a/c/d"));
        assert_eq!(p("/.."), PathBuf::from("/"));
        assert_eq!(p("x/y"), cwd.join("x/y"));
        assert_eq!(p("./x/../y"), cwd.join("y"));
        assert_eq!(p("."), cwd);
        assert!(absolute_path(Path::new("")).is_err());
    }

    #[cfg(unix)]
    #[test]
    fn a_parent_after_a_symbolic_link_is_the_targets() {
        let dir = tempfile::tempdir().unwrap();
        let tmp = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(tmp.join("b/c")).unwrap();
        std::fs::create_dir_all(tmp.join("a")).unwrap();
        std::os::unix::fs::symlink(tmp.join("b/c"), tmp.join("a/l")).unwrap();
        let p = |s: &str| absolute_path(&tmp.join(s)).unwrap();
        // The link's parent is b's, not a's; a link not followed by `..` is kept.
        assert_eq!(p("a/l/../x"), tmp.join("b/x"));
        assert_eq!(p("a/l/x/.."), tmp.join("a/l"));
        assert_eq!(p("a/l/./x"), tmp.join("a/l/x"));
        // A missing component is taken off by its text.
        assert_eq!(p("a/missing/../x"), tmp.join("a/x"));
    }
}
