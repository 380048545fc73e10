//! A substring search for a lowered ASCII word, ASCII case ignored, over text that is not
//! lowered: where a sequence of query terms may start in a stored text
//! ([`crate::identifier::Sequence`]), and where a query term occurs in a page hit's ASCII text
//! (`bm25::TermSearch`).

use memchr::arch::all::packedpair::Pair;
use memchr::memmem::Finder;

/// The search for one word.
#[derive(Debug, Clone)]
pub(crate) struct CaseFinder {
    word: Vec<u8>,
    how: How,
}

#[derive(Debug, Clone)]
enum How {
    /// The word's rarest byte (memchr's ranking, which its substring search uses) is rare in
    /// text: it is found in either case and the word compared around each place, so the text
    /// is read once and neither copied nor lowered.
    Rare { at: usize, lo: u8, up: u8 },
    /// Every byte of the word is common (`error`): a byte search would stop at most bytes of
    /// the text, so a lowered copy ([`CaseFinder::lower_into`]) is searched instead.
    Lowered(Box<Finder<'static>>),
}

impl CaseFinder {
    /// The search for `word` (ASCII, lowered here), by its rarest byte when `rare` says so,
    /// else when that byte ranks at most as `w` does in memchr's table (a pair's first index
    /// is its rarer byte): of the lowercase letters `j`, `k`, `q`, `w` and `z` do, and the
    /// digits 3 to 8; `None` when the word is empty.
    pub(crate) fn new(word: &[u8], rare: Option<bool>) -> Option<CaseFinder> {
        let word = word.to_ascii_lowercase();
        let at = Pair::new(&word).map_or(0, |p| usize::from(p.index1()));
        let b = *word.get(at)?;
        let rare = rare.unwrap_or_else(|| Pair::new(&[b, b'w']).is_some_and(|p| p.index1() == 0));
        let how = if rare {
            How::Rare {
                at,
                lo: b,
                up: b.to_ascii_uppercase(),
            }
        } else {
            How::Lowered(Box::new(Finder::new(&word).into_owned()))
        };
        Some(CaseFinder { word, how })
    }

    /// Whether the search reads `hay` lowered ([`CaseFinder::lower_into`] copies it).
    #[cfg(not(target_arch = "wasm32"))]
    pub(crate) fn lowers(&self) -> bool {
        matches!(self.how, How::Lowered(_))
    }

    /// What [`CaseFinder::starts`] reads besides `hay`, in `buf`: `hay` lowered when the
    /// search needs it, else nothing.
    pub(crate) fn lower_into(&self, hay: &[u8], buf: &mut Vec<u8>) {
        if let How::Lowered(_) = self.how {
            crate::bm25::lower_into(buf, hay);
        } else {
            buf.clear();
        }
    }

    /// Every place where the word starts in `hay`, ASCII case ignored, in ascending order
    /// (overlapping places too); `lowered` is what [`CaseFinder::lower_into`] gave for `hay`.
    pub(crate) fn starts<'h>(&'h self, hay: &'h [u8], lowered: &'h [u8]) -> Starts<'h> {
        match &self.how {
            How::Rare { at, lo, up } => Starts::Rare {
                places: memchr::memchr2_iter(*lo, *up, hay),
                at: *at,
                word: &self.word,
                hay,
            },
            How::Lowered(finder) => Starts::Lowered {
                finder,
                lowered,
                from: 0,
            },
        }
    }
}

/// The iterator of [`CaseFinder::starts`].
pub(crate) enum Starts<'h> {
    Rare {
        places: memchr::Memchr2<'h>,
        at: usize,
        word: &'h [u8],
        hay: &'h [u8],
    },
    Lowered {
        finder: &'h Finder<'static>,
        lowered: &'h [u8],
        from: usize,
    },
}

impl Iterator for Starts<'_> {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        match self {
            Starts::Rare {
                places,
                at,
                word,
                hay,
            } => places.find_map(|p| {
                let s = p.checked_sub(*at)?;
                let w = hay.get(s..s + word.len())?;
                w.eq_ignore_ascii_case(word).then_some(s)
            }),
            Starts::Lowered {
                finder,
                lowered,
                from,
            } => {
                let s = *from + finder.find(lowered.get(*from..)?)?;
                *from = s + 1;
                Some(s)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both searches find every place the word starts, overlapping ones too, as a comparison
    /// at each place does: texts of up to six symbols over both cases of a rare and a common
    /// letter and a separator, words of one to three of those letters.
    #[test]
    fn both_searches_find_every_place() {
        let texts = crate::test_util::strings_over(&["q", "Q", "a", "A", " "], 6);
        let words = ["q", "a", "qa", "aq", "qq", "aqa", "qaq"];
        let mut found = 0;
        let mut buf = Vec::new();
        for w in words {
            for rare in [true, false] {
                let f = CaseFinder::new(w.as_bytes(), Some(rare)).unwrap();
                for t in &texts {
                    let hay = t.as_bytes();
                    let want: Vec<usize> = (0..hay.len())
                        .filter(|&s| {
                            hay.get(s..s + w.len())
                                .is_some_and(|x| x.eq_ignore_ascii_case(w.as_bytes()))
                        })
                        .collect();
                    f.lower_into(hay, &mut buf);
                    let got: Vec<usize> = f.starts(hay, &buf).collect();
                    assert_eq!(got, want, "{w:?} {t:?} rare {rare}");
                    found += got.len();
                }
            }
        }
        assert!(found > 10_000, "{found}");
        assert!(CaseFinder::new(b"", None).is_none());
    }
}
