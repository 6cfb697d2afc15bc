//! The one markdown table writer of the reports.

use std::fmt::Write as _;

/// Column alignment in a markdown table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    /// Left (text).
    Left,
    /// Right (numbers).
    Right,
}

/// A markdown table: a header, then rows of cells (already formatted).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Table {
    header: Vec<String>,
    align: Vec<Align>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column headers, every column left-aligned.
    pub fn new<S: AsRef<str>>(header: &[S]) -> Table {
        Table {
            header: header.iter().map(|h| h.as_ref().to_string()).collect(),
            align: vec![Align::Left; header.len()],
            rows: Vec::new(),
        }
    }

    /// Set the alignment of every column (missing entries stay left-aligned).
    pub fn aligned(mut self, align: &[Align]) -> Table {
        for (a, b) in self.align.iter_mut().zip(align) {
            *a = *b;
        }
        self
    }

    /// Append a row; short rows are padded with empty cells, long ones keep their extra
    /// cells (markdown renderers ignore them).
    pub fn row<S: Into<String>>(&mut self, cells: impl IntoIterator<Item = S>) -> &mut Table {
        let mut r: Vec<String> = cells.into_iter().map(Into::into).collect();
        while r.len() < self.header.len() {
            r.push(String::new());
        }
        self.rows.push(r);
        self
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether the table has no rows.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The table in GitHub markdown, ending with a newline.
    pub fn markdown(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "| {} |", self.header.join(" | "));
        let sep: Vec<&str> = self
            .align
            .iter()
            .map(|a| match a {
                Align::Left => "---",
                Align::Right => "---:",
            })
            .collect();
        let _ = writeln!(s, "|{}|", sep.join("|"));
        for r in &self.rows {
            let _ = writeln!(s, "| {} |", r.join(" | "));
        }
        s
    }
}

impl std::fmt::Display for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.markdown())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_github_markdown() {
        let mut t = Table::new(&["method", "regret"]).aligned(&[Align::Left, Align::Right]);
        t.row(["gp-logei", "0.10 ± 0.02"]).row(["random"]);
        assert_eq!(
            t.markdown(),
            "| method | regret |\n|---|---:|\n| gp-logei | 0.10 ± 0.02 |\n| random |  |\n"
        );
        assert_eq!(t.len(), 2);
    }
}
