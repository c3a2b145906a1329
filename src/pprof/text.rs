//! The legacy text form of the profiles (`WriteTo(w, 1)` in Go): what Go's `runtime/pprof`
//! prints, byte for byte, down to the alignment of its `text/tabwriter`.

use goro_runtime::profile::{Frame, Record};
use std::fmt::Write as _;

/// Go's block and mutex profiles at debug 1 (its `writeBlock`, `writeMutex`): a header, then
/// per record `<delay> <count> @ <addresses>` and a line per function of its stack. Go counts
/// delays in CPU cycles and says how many make a second; goro counts nanoseconds, so a second
/// is 10⁹ of them. `sampling_period`: the mutex profile's rate, which Go prints.
pub(crate) fn contention(header: &str, sampling_period: Option<i32>, records: &[Record]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "--- {header}:");
    s.push_str("cycles/second=1000000000\n");
    if let Some(rate) = sampling_period {
        let _ = writeln!(s, "sampling period={rate}");
    }
    for r in records {
        let _ = write!(s, "{} {} @", r.delay, r.count);
        addresses(&mut s, &r.stack);
        s.push('\n');
        stack(&mut s, &r.stack);
    }
    tabwriter(&s)
}

/// Go's count profiles at debug 1 (its `printCountProfile`, the goroutine profile's form):
/// `<name> profile: total <n>`, then per distinct stack `<count> @ <addresses>` and its
/// functions.
pub(crate) fn counts(name: &str, records: &[Record]) -> String {
    let total: i64 = records.iter().map(|r| r.count).sum();
    let mut s = String::new();
    let _ = writeln!(s, "{name} profile: total {total}");
    for r in records {
        let _ = write!(s, "{} @", r.count);
        addresses(&mut s, &r.stack);
        s.push('\n');
        stack(&mut s, &r.stack);
    }
    tabwriter(&s)
}

fn addresses(s: &mut String, stack: &[Frame]) {
    for f in stack {
        let _ = write!(s, " {:#x}", f.addr);
    }
}

/// Go's `printStackRecord`: a line per function (each function inlined at a frame has its
/// own, at the frame's address), then an empty line. goro knows no function's entry address,
/// so every offset is `+0x0`; an unknown file or line prints as Go prints it, `?:0`.
fn stack(s: &mut String, stack: &[Frame]) {
    for f in stack {
        for l in &f.lines {
            if l.function.is_empty() || l.function == "??" {
                let _ = writeln!(s, "#\t{:#x}", f.addr);
                continue;
            }
            let file = l.file.as_deref().unwrap_or("?");
            let _ = writeln!(s, "#\t{:#x}\t{}+0x0\t{}:{}", f.addr, l.function, file, l.line.unwrap_or(0));
        }
    }
    s.push('\n');
}

/// Go's `text/tabwriter` as `runtime/pprof` sets it up (`NewWriter(w, 1, 8, 1, '\t', 0)`:
/// minimum width 1, tabs 8 wide, padding 1, padded with tabs), so that the columns of the
/// function lines line up as Go's do.
///
/// A cell is text ended by a tab; the text after a line's last tab is no cell and is not
/// aligned. A column is aligned over a block of consecutive lines that all have a cell in it,
/// each cell padded with tabs to the width of the block's widest cell plus the padding,
/// rounded up to a whole tab.
pub(crate) fn tabwriter(text: &str) -> String {
    let lines: Vec<Vec<&str>> = text.split('\n').map(|l| l.split('\t').collect()).collect();
    let mut tw = TabWriter { lines: &lines, widths: Vec::new(), out: String::with_capacity(text.len() * 2) };
    tw.format(0, lines.len());
    tw.out
}

const MIN_WIDTH: usize = 1;
const TAB_WIDTH: usize = 8;
const PADDING: usize = 1;

struct TabWriter<'a> {
    lines: &'a [Vec<&'a str>],
    /// The widths of the columns of the block being written, leftmost first.
    widths: Vec<usize>,
    out: String,
}

impl TabWriter<'_> {
    /// Writes lines `line0..line1`, whose columns left of `self.widths.len()` are sized: finds
    /// the blocks of the next column, sizes each and writes it recursively.
    fn format(&mut self, mut line0: usize, line1: usize) {
        let column = self.widths.len();
        let mut this = line0;
        while this < line1 {
            if column + 1 >= self.lines[this].len() {
                this += 1;
                continue;
            }
            self.write_lines(line0, this);
            line0 = this;
            let mut width = MIN_WIDTH;
            while this < line1 && column + 1 < self.lines[this].len() {
                width = width.max(self.lines[this][column].chars().count() + PADDING);
                this += 1;
            }
            self.widths.push(width);
            self.format(line0, this);
            self.widths.pop();
            line0 = this;
        }
        self.write_lines(line0, line1);
    }

    fn write_lines(&mut self, line0: usize, line1: usize) {
        for i in line0..line1 {
            for (j, cell) in self.lines[i].iter().enumerate() {
                self.out.push_str(cell);
                if let Some(&width) = self.widths.get(j) {
                    // Tabs up to the column's width rounded up to a whole tab.
                    let cell_width = width.div_ceil(TAB_WIDTH) * TAB_WIDTH;
                    let pad = cell_width - cell.chars().count();
                    for _ in 0..pad.div_ceil(TAB_WIDTH) {
                        self.out.push('\t');
                    }
                }
            }
            if i + 1 < self.lines.len() {
                self.out.push('\n');
            }
        }
    }
}
