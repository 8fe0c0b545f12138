//! Value lists for the sweep flags: `10`, `0,1,10,100`, `1..8`, `1..4,8`.
//!
//! A sweep is the cartesian product of its lists, so each list is kept in the order given and
//! must not repeat a value: a repeated value would make two cells with the same key, which a
//! baseline comparison could not tell apart.

use crate::model::Bounds;

/// The values of one sweep flag, in the order given, without repeats.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Grid(Vec<u64>);

impl Bounds {
    /// Parses one value within these bounds.
    pub(crate) fn parse_one(self, s: &str) -> Result<u64, String> {
        let v = number(s, s)?;
        self.check(v)?;
        Ok(v)
    }
}

/// More values than this in one list is surely a typo (`1..100000`), not a sweep.
pub(crate) const MAX_VALUES: usize = 1000;

impl Grid {
    /// Parses `item(,item)*` where an item is `n` or the inclusive range `a..b`.
    ///
    /// ```text
    /// "1..4,8" -> [1, 2, 3, 4, 8]
    /// ```
    pub(crate) fn parse(s: &str, bounds: Bounds) -> Result<Grid, String> {
        if s.trim().is_empty() {
            return Err("wants a value, a list like 1,2,4 or a range like 1..8".into());
        }
        let mut values = Vec::new();
        for item in s.split(',') {
            let item = item.trim();
            let (lo, hi) = match item.split_once("..") {
                Some((a, b)) => (number(a, item)?, number(b, item)?),
                None => {
                    let v = number(item, item)?;
                    (v, v)
                }
            };
            if lo > hi {
                return Err(format!(
                    "range `{item}` is empty (its start is after its end)"
                ));
            }
            bounds.check(lo)?;
            bounds.check(hi)?;
            if hi - lo >= MAX_VALUES as u64 || values.len() + ((hi - lo) as usize) >= MAX_VALUES {
                return Err(format!("more than {MAX_VALUES} values"));
            }
            for v in lo..=hi {
                if values.contains(&v) {
                    return Err(format!("{v} appears more than once"));
                }
                values.push(v);
            }
        }
        Ok(Grid(values))
    }

    /// A list of one value.
    pub(crate) fn one(v: u64) -> Grid {
        Grid(vec![v])
    }

    /// A list from values read elsewhere (a baseline file), checked as if parsed.
    pub(crate) fn from_values(values: Vec<u64>, bounds: Bounds) -> Result<Grid, String> {
        if values.is_empty() || values.len() > MAX_VALUES {
            return Err(format!("{}: wants 1 to {MAX_VALUES} values", bounds.flag));
        }
        for (i, &v) in values.iter().enumerate() {
            bounds
                .check(v)
                .map_err(|e| format!("{}: {e}", bounds.flag))?;
            if values[..i].contains(&v) {
                return Err(format!("{}: {v} appears more than once", bounds.flag));
            }
        }
        Ok(Grid(values))
    }

    /// The values, in the order given.
    pub(crate) fn values(&self) -> &[u64] {
        &self.0
    }
}

/// One number of `item`, with an error that quotes the whole item.
fn number(text: &str, item: &str) -> Result<u64, String> {
    let text = text.trim();
    if text
        .strip_prefix('-')
        .is_some_and(|t| t.parse::<u64>().is_ok())
    {
        return Err(format!("`{item}` is negative; values are counts"));
    }
    text.parse::<u64>()
        .map_err(|_| format!("`{item}` is not a number, list or range (e.g. 1,2,4 or 1..8)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const B: Bounds = Bounds {
        flag: "-M",
        min: 1,
        max: 64,
    };
    const O: Bounds = Bounds {
        flag: "-O",
        min: 0,
        max: 1 << 20,
    };

    fn p(s: &str) -> Result<Vec<u64>, String> {
        Grid::parse(s, B).map(|g| g.0)
    }

    #[test]
    fn values_lists_and_ranges() {
        assert_eq!(p("8").unwrap(), [8]);
        assert_eq!(p(" 1, 2 ,4").unwrap(), [1, 2, 4]);
        assert_eq!(p("1..4").unwrap(), [1, 2, 3, 4]);
        assert_eq!(p("3..3").unwrap(), [3]);
        assert_eq!(p("1..4,8").unwrap(), [1, 2, 3, 4, 8]);
        assert_eq!(p("8,1..2").unwrap(), [8, 1, 2]);
        assert_eq!(Grid::parse("0,1,10,100", O).unwrap().0, [0, 1, 10, 100]);
    }

    #[test]
    fn bad_input_is_named() {
        let e = |s| p(s).unwrap_err();
        assert!(e("abc").contains("`abc` is not a number"), "{}", e("abc"));
        assert!(e("-1").contains("negative"));
        assert!(e("0").contains("out of range"));
        assert!(e("65").contains("out of range"));
        assert!(e("8..1").contains("empty"));
        assert!(e("").contains("wants a value"));
        assert!(Grid::from_values(vec![1, 1], B)
            .unwrap_err()
            .contains("-M: 1 appears"));
        assert!(Grid::from_values(vec![0], B)
            .unwrap_err()
            .contains("-M: 0 is out of range"));
        assert!(Grid::from_values(vec![], B).is_err());
        assert_eq!(Bounds::REPS.parse_one("7"), Ok(7));
        assert!(Bounds::REPS
            .parse_one("0")
            .unwrap_err()
            .contains("out of range"));
        assert!(Bounds::REPS
            .parse_one("1,2")
            .unwrap_err()
            .contains("not a number"));
        assert!(e("1,,2").contains("not a number"));
        assert!(e("1..").contains("not a number"));
        assert!(e("..4").contains("not a number"));
        assert!(e("1..2..3").contains("not a number"));
        assert!(e("2,1..3").contains("2 appears more than once"));
        assert!(e("1.5").contains("not a number"));
        assert!(e("99999999999999999999999").contains("not a number"));
        let big = Bounds {
            flag: "-N",
            min: 1,
            max: u64::MAX,
        };
        assert!(Grid::parse("1..100000000000", big)
            .unwrap_err()
            .contains("more than"));
        assert!(Grid::parse("0..18446744073709551615", big)
            .unwrap_err()
            .contains("out of"));
    }
}
