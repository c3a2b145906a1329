//! A profile in pprof's own format: the messages of profile.proto (package
//! `perftools.profiles`), and a builder that turns records into one, as Go's
//! `runtime/pprof` does in its `profileBuilder`.
//!
//! The messages are written out here, derived with prost, rather than generated from the
//! .proto file: they are few and frozen, and generating them would need protoc at build time.
//! Only the fields a profile of goro's needs, and the ones every reader knows, are mirrored;
//! a decoder skips the others.

use goro_runtime::profile::{Frame, Record};
use std::collections::HashMap;
use std::io::{self, Write};
use std::time::{SystemTime, UNIX_EPOCH};

/// profile.proto's `Profile`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Profile {
    #[prost(message, repeated, tag = "1")]
    pub sample_type: Vec<ValueType>,
    #[prost(message, repeated, tag = "2")]
    pub sample: Vec<Sample>,
    #[prost(message, repeated, tag = "3")]
    pub mapping: Vec<Mapping>,
    #[prost(message, repeated, tag = "4")]
    pub location: Vec<Location>,
    #[prost(message, repeated, tag = "5")]
    pub function: Vec<Function>,
    /// Every string of the profile, referred to by index; `string_table[0]` is `""`.
    #[prost(string, repeated, tag = "6")]
    pub string_table: Vec<String>,
    #[prost(int64, tag = "7")]
    pub drop_frames: i64,
    #[prost(int64, tag = "8")]
    pub keep_frames: i64,
    #[prost(int64, tag = "9")]
    pub time_nanos: i64,
    #[prost(int64, tag = "10")]
    pub duration_nanos: i64,
    #[prost(message, optional, tag = "11")]
    pub period_type: Option<ValueType>,
    #[prost(int64, tag = "12")]
    pub period: i64,
    #[prost(int64, repeated, tag = "13")]
    pub comment: Vec<i64>,
    #[prost(int64, tag = "14")]
    pub default_sample_type: i64,
}

/// profile.proto's `ValueType`: what a sample's value counts, and in what unit.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct ValueType {
    #[prost(int64, tag = "1")]
    pub r#type: i64,
    #[prost(int64, tag = "2")]
    pub unit: i64,
}

/// profile.proto's `Sample`: one stack (leaf first) and its values.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Sample {
    #[prost(uint64, repeated, tag = "1")]
    pub location_id: Vec<u64>,
    #[prost(int64, repeated, tag = "2")]
    pub value: Vec<i64>,
    #[prost(message, repeated, tag = "3")]
    pub label: Vec<Label>,
}

/// profile.proto's `Label`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Label {
    #[prost(int64, tag = "1")]
    pub key: i64,
    #[prost(int64, tag = "2")]
    pub str: i64,
    #[prost(int64, tag = "3")]
    pub num: i64,
    #[prost(int64, tag = "4")]
    pub num_unit: i64,
}

/// profile.proto's `Mapping`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Mapping {
    #[prost(uint64, tag = "1")]
    pub id: u64,
    #[prost(uint64, tag = "2")]
    pub memory_start: u64,
    #[prost(uint64, tag = "3")]
    pub memory_limit: u64,
    #[prost(uint64, tag = "4")]
    pub file_offset: u64,
    #[prost(int64, tag = "5")]
    pub filename: i64,
    #[prost(int64, tag = "6")]
    pub build_id: i64,
    #[prost(bool, tag = "7")]
    pub has_functions: bool,
    #[prost(bool, tag = "8")]
    pub has_filenames: bool,
    #[prost(bool, tag = "9")]
    pub has_line_numbers: bool,
    #[prost(bool, tag = "10")]
    pub has_inline_frames: bool,
}

/// profile.proto's `Location`: one frame, its functions innermost (inlined) first.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Location {
    #[prost(uint64, tag = "1")]
    pub id: u64,
    #[prost(uint64, tag = "2")]
    pub mapping_id: u64,
    #[prost(uint64, tag = "3")]
    pub address: u64,
    #[prost(message, repeated, tag = "4")]
    pub line: Vec<Line>,
    #[prost(bool, tag = "5")]
    pub is_folded: bool,
}

/// profile.proto's `Line`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Line {
    #[prost(uint64, tag = "1")]
    pub function_id: u64,
    #[prost(int64, tag = "2")]
    pub line: i64,
    #[prost(int64, tag = "3")]
    pub column: i64,
}

/// profile.proto's `Function`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Function {
    #[prost(uint64, tag = "1")]
    pub id: u64,
    #[prost(int64, tag = "2")]
    pub name: i64,
    #[prost(int64, tag = "3")]
    pub system_name: i64,
    #[prost(int64, tag = "4")]
    pub filename: i64,
    #[prost(int64, tag = "5")]
    pub start_line: i64,
}

/// What kind of profile is built: the names of its values and of its period.
pub(crate) struct Shape<'a> {
    /// `(type, unit)` of each of a sample's values, in order.
    pub sample_types: &'a [(&'a str, &'a str)],
    /// `(type, unit)` of the period.
    pub period_type: (&'a str, &'a str),
    pub period: i64,
}

/// The identity of a frame's location: its address and its functions at their lines. Two
/// frames made up by goro (address 0) are told apart by their functions.
type LocationKey = (usize, Vec<(String, Option<String>, Option<u32>)>);

/// Assembles a [`Profile`], each string, function and location once.
struct Builder {
    profile: Profile,
    strings: HashMap<String, i64>,
    functions: HashMap<(String, Option<String>), u64>,
    locations: HashMap<LocationKey, u64>,
}

impl Builder {
    fn new() -> Builder {
        let mut b = Builder {
            profile: Profile::default(),
            strings: HashMap::new(),
            functions: HashMap::new(),
            locations: HashMap::new(),
        };
        // profile.proto: string_table[0] must be "" (index 0 stands for "unset").
        b.string("");
        b
    }

    fn string(&mut self, s: &str) -> i64 {
        if let Some(&i) = self.strings.get(s) {
            return i;
        }
        let i = self.profile.string_table.len() as i64;
        self.profile.string_table.push(s.to_owned());
        self.strings.insert(s.to_owned(), i);
        i
    }

    fn value_type(&mut self, (ty, unit): (&str, &str)) -> ValueType {
        ValueType { r#type: self.string(ty), unit: self.string(unit) }
    }

    fn function(&mut self, name: &str, file: Option<&str>) -> u64 {
        let key = (name.to_owned(), file.map(str::to_owned));
        if let Some(&id) = self.functions.get(&key) {
            return id;
        }
        let id = self.profile.function.len() as u64 + 1;
        let name = self.string(name);
        let filename = self.string(file.unwrap_or(""));
        self.profile.function.push(Function { id, name, system_name: name, filename, start_line: 0 });
        self.functions.insert(key, id);
        id
    }

    fn location(&mut self, frame: &Frame) -> u64 {
        let key: LocationKey =
            (frame.addr, frame.lines.iter().map(|l| (l.function.clone(), l.file.clone(), l.line)).collect());
        if let Some(&id) = self.locations.get(&key) {
            return id;
        }
        let id = self.profile.location.len() as u64 + 1;
        let line = frame
            .lines
            .iter()
            .map(|l| Line {
                function_id: self.function(&l.function, l.file.as_deref()),
                line: l.line.map_or(0, i64::from),
                column: 0,
            })
            .collect();
        self.profile.location.push(Location {
            id,
            mapping_id: MAPPING_ID,
            address: frame.addr as u64,
            line,
            is_folded: false,
        });
        self.locations.insert(key, id);
        id
    }
}

/// The one mapping every location belongs to.
const MAPPING_ID: u64 = 1;

/// The profile of `records`, each sample's values given by `values` (as many as
/// `shape.sample_types`).
pub(crate) fn build(shape: &Shape<'_>, records: &[Record], values: impl Fn(&Record) -> Vec<i64>) -> Profile {
    let mut b = Builder::new();
    b.profile.sample_type = shape.sample_types.iter().map(|&t| b.value_type(t)).collect();
    b.profile.period_type = Some(b.value_type(shape.period_type));
    b.profile.period = shape.period;
    b.profile.time_nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as i64);
    for r in records {
        let location_id = r.stack.iter().map(|f| b.location(f)).collect();
        b.profile.sample.push(Sample { location_id, value: values(r), label: Vec::new() });
    }
    // The stacks come symbolized (every location has its functions, files and lines), which a
    // mapping that says so tells pprof: it then looks for no binary to symbolize them with. One
    // mapping for all, its range empty, as Go writes when it cannot read the process's own
    // mappings (pprof expects at least one).
    let exe = std::env::current_exe().map(|p| p.display().to_string()).unwrap_or_default();
    let filename = b.string(&exe);
    b.profile.mapping.push(Mapping {
        id: MAPPING_ID,
        memory_start: 0,
        memory_limit: 0,
        file_offset: 0,
        filename,
        build_id: 0,
        has_functions: true,
        has_filenames: true,
        has_line_numbers: true,
        has_inline_frames: true,
    });
    b.profile
}

/// Writes `profile` as pprof reads it: the encoded message, gzipped.
pub(crate) fn write(profile: &Profile, w: impl Write) -> io::Result<()> {
    use prost::Message as _;
    // Go's `runtime/pprof` compresses at the fastest level too: a profile is written while the
    // program runs, and is small.
    let mut gz = flate2::write::GzEncoder::new(w, flate2::Compression::fast());
    gz.write_all(&profile.encode_to_vec())?;
    gz.finish()?.flush()
}
