//! Studies with people from the command line: `agora study create | list | tokens`,
//! `agora ask`, `tell`, `status`, `best`, `export` and `plot`.
//!
//! Every command opens the store (`--storage`: a SQLite file or a PostgreSQL database),
//! replays the study's log (exact resume) and does one operation through [`LiveStudy`],
//! exactly as the web server does. [`run`] parses and
//! executes a command in process, writing to any output (the argument fuzzer calls it);
//! the binary calls [`execute`] with the arguments clap already parsed.

use agora_study::live::{Actor, LiveStudy, StorageUrl, Store, StoreError};
use anyhow::{Context, Result, anyhow, bail};
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

mod create;
#[cfg(test)]
mod fuzz;
mod show;
mod tell;

/// Where the studies live.
#[derive(Args, Debug, Clone)]
pub struct Db {
    /// Where the studies live: a SQLite file (a path, or sqlite:///path) or a PostgreSQL
    /// database (postgresql://user:password@host:port/database). Default: $AGORA_STORAGE,
    /// else $AGORA_DB, else agora.db. `--db` is the same option.
    #[arg(long = "storage", visible_alias = "db", value_name = "URL")]
    storage: Option<String>,
}

impl Db {
    /// The storage this command names.
    fn url(&self) -> Result<StorageUrl> {
        storage_url(self.storage.as_deref())
    }
}

/// The storage named by `flag` (`--storage` / `--db`), else `AGORA_STORAGE`, else
/// `AGORA_DB`, else `agora.db`.
pub fn storage_url(flag: Option<&str>) -> Result<StorageUrl> {
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    let s = flag
        .map(str::to_string)
        .or_else(|| env("AGORA_STORAGE"))
        .or_else(|| env("AGORA_DB"))
        .unwrap_or_else(|| "agora.db".into());
    Ok(StorageUrl::parse(&s)?)
}

/// The commands for studies with people.
#[derive(Subcommand, Debug)]
pub enum LiveCommand {
    /// Create, list and show the tokens of studies run with people.
    Study {
        #[command(subcommand)]
        cmd: StudyCommand,
    },
    /// Print a study's open query: the options with their parameters, the prompt, who has
    /// voted (`--json` for programs). `--worker ID` hands a worker a query of its own.
    Ask(AskArgs),
    /// Answer a study's open query: a pair's winner, a tie, votes, ratings or values.
    Tell(TellArgs),
    /// A study at a glance: answers, rounds per channel, the open query, the recommendation.
    Status(ShowArgs),
    /// The recommendation so far, with the model's mean ± sd where it has one.
    Best(ShowArgs),
    /// The study's log as CSV (one row per event) or JSON.
    Export(ExportArgs),
    /// Progress and the model's current belief (1-D or 2-D spaces) as SVG or PNG.
    Plot(PlotArgs),
}

/// `agora study ...`
#[derive(Subcommand, Debug)]
pub enum StudyCommand {
    /// Create a study: its space, method, participants and seed; prints its first query and
    /// the tokens for the web page.
    Create(CreateArgs),
    /// List the studies in the file.
    List {
        #[command(flatten)]
        db: Db,
    },
    /// Import earlier evaluations or comparisons before the first answer: a CSV file
    /// (`NAME,...,value` for evaluations; `winner.NAME,...,loser.NAME,...` for
    /// comparisons) or JSON lines (`{"NAME": ..., "value": ...}` or `{"winner": {...},
    /// "loser": {...}}`), in the study's units. Every row is checked (a bad one is named
    /// by its line) and nothing is stored unless all are valid; the open question is
    /// withdrawn and the next one is asked in the light of the data.
    Import {
        /// The study.
        name: String,
        /// The file.
        file: PathBuf,
        #[command(flatten)]
        db: Db,
    },
    /// Put an option of your own into the next question (after the open one): a JSON
    /// object of the parameters by name, e.g. `--option '{"temp": 22, "fans": 1}'`.
    Enqueue {
        /// The study.
        name: String,
        /// The option.
        #[arg(long, value_name = "JSON")]
        option: String,
        #[command(flatten)]
        db: Db,
    },
    /// Show media with an option of the open question of a box-space study (a rendering
    /// of the design, a description or a link), for people to see beside its numbers: an
    /// image or sound file (png, jpg, gif, webp, svg, mp3, wav, ogg; at most 1 MiB), a
    /// `--text` or a `--url`. (A candidate set names its media when it is created:
    /// `--space candidates.csv --media-column COLUMN`.)
    Media {
        /// The study.
        name: String,
        /// The open question's id.
        #[arg(long = "query", value_name = "ID")]
        query_id: u64,
        /// The option's index in the question (0 for the first, A).
        #[arg(long)]
        option: usize,
        /// An image or sound file.
        #[arg(long, value_name = "FILE", conflicts_with_all = ["text", "url"], required_unless_present_any = ["text", "url"])]
        file: Option<PathBuf>,
        /// A description.
        #[arg(long, conflicts_with = "url")]
        text: Option<String>,
        /// A link (http or https).
        #[arg(long)]
        url: Option<String>,
        #[command(flatten)]
        db: Db,
    },
    /// Show a study's facilitator and participant tokens and their web-page links.
    Tokens {
        /// The study.
        name: String,
        /// Address `agora serve` listens on, for the links.
        #[arg(long, default_value = "http://127.0.0.1:8080")]
        url: String,
        #[command(flatten)]
        db: Db,
    },
}

/// `agora study create`
#[derive(Args, Debug)]
pub struct CreateArgs {
    /// The study's name: 1–64 characters of a-z, 0-9, '-' and '_'.
    name: String,
    /// A parameter: `NAME:real:LO:HI`, `NAME:log:LO:HI` (log scale, LO > 0),
    /// `NAME:int:LO:HI` or `NAME:cat:A,B,C` (repeat for each parameter).
    #[arg(
        long = "param",
        value_name = "NAME:TYPE:SPEC",
        allow_hyphen_values = true
    )]
    params: Vec<String>,
    /// The space from a TOML or JSON file (`kind = "box"` with `[[params]]` of `type` real,
    /// log_real, integer or categorical; or `kind = "candidates"` with names and features),
    /// or a candidate set from a CSV file: a `name` column (else the first), numeric
    /// feature columns (scaled to [0, 1]) and, with `--media-column`, each candidate's media.
    #[arg(long, value_name = "FILE", conflicts_with = "params")]
    space: Option<PathBuf>,
    /// The column of a CSV `--space` holding each candidate's media: an image or sound
    /// file (relative to the CSV), an http(s) URL, or a text description (empty: none).
    #[arg(long, value_name = "COLUMN", requires = "space")]
    media_column: Option<String>,
    /// The whole study spec from a TOML or JSON file (space, method, seed, participants,
    /// description); its name, if given, must match NAME.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["params", "space", "method", "knobs", "participants", "seed", "description"])]
    spec: Option<PathBuf>,
    /// The method: bo, pairs, group-pairs, social, hpbo or boap (default: pairs).
    #[arg(long)]
    method: Option<String>,
    /// A method knob `KEY=VALUE` (repeatable). bo: strategy; pairs, group-pairs: rule;
    /// social: variant, rho, q, init_pairs, lengthscale, candidates; hpbo: acquisition,
    /// anchors, a; boap: properties, init. Values are JSON where they parse
    /// (`--set 'properties=["stiffness"]'`), strings otherwise.
    #[arg(long = "set", value_name = "KEY=VALUE", allow_hyphen_values = true)]
    knobs: Vec<String>,
    /// Who answers, comma-separated: the rater (pairs), the group (group-pairs, social, in
    /// ballot order), the expert or the parties.
    #[arg(long, value_delimiter = ',', value_name = "NAMES")]
    participants: Vec<String>,
    /// Seed of every random choice the method makes (default 0).
    #[arg(long)]
    seed: Option<u64>,
    /// Time limit of each group vote, in seconds (1 to 604800): when it passes, `agora
    /// serve` closes the round, missing votes counting as "can't tell" (default: none).
    #[arg(long, value_name = "SECONDS")]
    round_seconds: Option<u64>,
    /// What is being optimized, for the people answering.
    #[arg(long)]
    description: Option<String>,
    /// Address `agora serve` listens on, for the links printed.
    #[arg(long, default_value = "http://127.0.0.1:8080")]
    url: String,
    #[command(flatten)]
    db: Db,
}

/// `agora ask`
#[derive(Args, Debug)]
pub struct AskArgs {
    /// The study.
    name: String,
    /// Print the query as JSON.
    #[arg(long)]
    json: bool,
    /// See the query as this participant does (others' private ballots hidden).
    #[arg(long = "as", value_name = "PARTICIPANT", conflicts_with = "worker")]
    as_: Option<String>,
    /// Several workers on one `bo` study: print the query this worker holds, else hand it
    /// a new one (the open query nobody holds, else one the method proposes with the
    /// others' points pending). Each query goes to one worker; answer it with
    /// `agora tell NAME --query ID` (or `--worker ID`).
    #[arg(long, value_name = "ID")]
    worker: Option<String>,
    #[command(flatten)]
    db: Db,
}

/// `agora tell`
#[derive(Args, Debug)]
pub struct TellArgs {
    /// The study.
    name: String,
    /// The query answered (default: the open one). An answer to a query that is no longer
    /// open is refused; the same answer again is "already recorded". With workers: any
    /// query a worker holds.
    #[arg(long)]
    query: Option<u64>,
    /// Answer the query this worker holds (`agora ask --worker`); with --query, that
    /// query must be the worker's.
    #[arg(long, value_name = "ID")]
    worker: Option<String>,
    /// The option preferred (comparisons, best-of-k, an expert's property comparisons): its
    /// letter (A, B, ...), its index (0, 1, ...), its name, or `tie`.
    #[arg(long, allow_hyphen_values = true)]
    winner: Option<String>,
    /// Can't tell: no option preferred.
    #[arg(long)]
    tie: bool,
    /// The participant whose ballot this is (with --vote or --rating).
    #[arg(long = "as", value_name = "PARTICIPANT")]
    as_: Option<String>,
    /// One participant's vote on a group's pair: A, B (or 0, 1) or tie.
    #[arg(long, allow_hyphen_values = true)]
    vote: Option<String>,
    /// Every participant's vote at once, comma-separated in the participants' order, e.g.
    /// `A,B,tie`.
    #[arg(long, allow_hyphen_values = true)]
    votes: Option<String>,
    /// One participant's rating of the option (a finite number, larger is better).
    #[arg(long, allow_hyphen_values = true)]
    rating: Option<String>,
    /// Values, comma-separated: the measured value of each option evaluated (one per
    /// party), or every participant's rating of a group's option.
    #[arg(long, allow_hyphen_values = true)]
    values: Option<String>,
    /// Close the open group vote now: missing votes count as can't tell.
    #[arg(long)]
    close: bool,
    #[command(flatten)]
    db: Db,
}

/// `agora status` and `agora best`
#[derive(Args, Debug)]
pub struct ShowArgs {
    /// The study.
    name: String,
    /// Print JSON.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    db: Db,
}

/// Export formats.
#[derive(ValueEnum, Debug, Clone, Copy)]
pub enum Format {
    /// One row per event, options in user units.
    Csv,
    /// The spec and every event.
    Json,
}

/// `agora export`
#[derive(Args, Debug)]
pub struct ExportArgs {
    /// The study.
    name: String,
    /// Output format.
    #[arg(long, value_enum)]
    format: Format,
    /// Write here instead of to standard output.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    #[command(flatten)]
    db: Db,
}

/// `agora plot`
#[derive(Args, Debug)]
pub struct PlotArgs {
    /// The study.
    name: String,
    /// The figure: a `.svg` or `.png` file.
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
    #[command(flatten)]
    db: Db,
}

#[derive(Parser, Debug)]
#[command(name = "agora")]
struct LiveCli {
    #[command(subcommand)]
    cmd: LiveCommand,
}

/// Parse `args` (without the program name) as one of the study commands and execute it,
/// writing what it prints to `out`. Help and version requests print and succeed; every
/// other problem is an error naming the field and the allowed values.
// The binary parses with its whole command tree and calls `execute`; `run` is for tests.
#[cfg_attr(not(test), allow(dead_code))]
pub fn run<I, T>(args: I, out: &mut impl Write) -> Result<()>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString>,
{
    let argv = std::iter::once(OsString::from("agora")).chain(args.into_iter().map(Into::into));
    match LiveCli::try_parse_from(argv) {
        Ok(cli) => execute(cli.cmd, out),
        Err(e) => match e.kind() {
            clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion => {
                write!(out, "{}", e.render())?;
                Ok(())
            }
            _ => Err(anyhow!("{}", e.render().to_string().trim_end())),
        },
    }
}

/// Execute a parsed study command, writing to `out`.
pub fn execute(cmd: LiveCommand, out: &mut impl Write) -> Result<()> {
    match dispatch(cmd, out) {
        // A reader that stops early (`agora export ... | head`) is not a failure.
        Err(e)
            if e.downcast_ref::<std::io::Error>()
                .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe) =>
        {
            Ok(())
        }
        r => r,
    }
}

fn dispatch(cmd: LiveCommand, out: &mut impl Write) -> Result<()> {
    match cmd {
        LiveCommand::Study {
            cmd: StudyCommand::Create(a),
        } => create::create(a, out),
        LiveCommand::Study {
            cmd: StudyCommand::List { db },
        } => create::list(&db.url()?, out),
        LiveCommand::Study {
            cmd: StudyCommand::Import { name, file, db },
        } => {
            let text = std::fs::read_to_string(&file)
                .with_context(|| format!("reading `{}`", file.display()))?;
            let mut study = open_study(&db, &name)?;
            let data = agora_study::live::import::read_observations(&study.spec().space, &text)
                .with_context(|| format!("`{}`", file.display()))?;
            let n = data.len();
            study.import(&Actor::Owner, data)?;
            writeln!(out, "imported {n} rows into `{name}`; the next question:")?;
            match study.pending_view(&Actor::Owner) {
                Some(v) => show::print_pending(out, &name, &v),
                None => Ok(writeln!(out, "(none open)")?),
            }
        }
        LiveCommand::Study {
            cmd: StudyCommand::Enqueue { name, option, db },
        } => {
            let mut study = open_study(&db, &name)?;
            let x = agora_study::live::import::read_option(&study.spec().space, &option)?;
            let open = study.pending().map(|q| q.id);
            study.enqueue(&Actor::Owner, x)?;
            match open {
                Some(id) => writeln!(
                    out,
                    "enqueued: the option is in the next question after the open one (query {id})"
                )?,
                None => writeln!(out, "enqueued: the option is in the open question")?,
            }
            Ok(())
        }
        LiveCommand::Study {
            cmd:
                StudyCommand::Media {
                    name,
                    query_id,
                    option,
                    file,
                    text,
                    url,
                    db,
                },
        } => {
            use agora_study::live::media::{Media, content_type_of};
            let media = match (file, text, url) {
                (Some(f), _, _) => {
                    let ct = content_type_of(&f).ok_or_else(|| {
                        agora_core::Error::invalid(
                            "file",
                            format!(
                                "`{}`: allowed extensions png, jpg, jpeg, gif, webp, svg, mp3, \
                                 wav, ogg",
                                f.display()
                            ),
                        )
                    })?;
                    let bytes =
                        std::fs::read(&f).with_context(|| format!("reading `{}`", f.display()))?;
                    Media::file(ct, &bytes, "file")?
                }
                (None, Some(text), _) => Media::Text { text },
                (None, None, Some(url)) => Media::Url { url },
                (None, None, None) => bail!("give --file, --text or --url"),
            };
            let mut study = open_study(&db, &name)?;
            let outcome = study.post_media(&Actor::Owner, query_id, option, media)?;
            writeln!(
                out,
                "{}: option {option} of query {query_id} in `{name}`",
                match outcome {
                    agora_study::live::Outcome::Duplicate => "already shown",
                    _ => "shown",
                }
            )?;
            Ok(())
        }
        LiveCommand::Study {
            cmd: StudyCommand::Tokens { name, url, db },
        } => {
            let store = open_existing(&db.url()?)?;
            let stored = store.study(&name)?;
            create::print_tokens(out, &stored, &url)
        }
        LiveCommand::Ask(a) => show::ask(a, out),
        LiveCommand::Tell(a) => tell::tell(a, out),
        LiveCommand::Status(a) => show::status(a, out),
        LiveCommand::Best(a) => show::best(a, out),
        LiveCommand::Export(a) => show::export(a, out),
        LiveCommand::Plot(a) => show::plot_cmd(a, out),
    }
}

/// The store `url` names, which must exist (only `study create` makes a new one).
fn open_existing(url: &StorageUrl) -> Result<Arc<dyn Store>> {
    match url.open(false) {
        Ok(store) => Ok(store),
        Err(StoreError::NotFound { .. }) => match url.sqlite_path() {
            Some(path) => bail!(
                "no study file at `{}`: create a study first (`agora study create NAME ...`), \
                 or point --storage (or AGORA_STORAGE) at an existing file",
                path.display()
            ),
            None => bail!(
                "no studies in {url} (the database has no agora tables): create a study first \
                 (`agora study create NAME ...`), or point --storage (or AGORA_STORAGE) at \
                 another database"
            ),
        },
        Err(e) => Err(e).with_context(|| format!("opening the study store `{url}`")),
    }
}

fn open_study(db: &Db, name: &str) -> Result<LiveStudy> {
    let store = open_existing(&db.url()?)?;
    let study = LiveStudy::open(store, name)?;
    if let Some(note) = study.snapshot_note() {
        eprintln!("note: {note}");
    }
    Ok(study)
}
