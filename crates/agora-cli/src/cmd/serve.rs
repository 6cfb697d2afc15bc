//! `agora serve`: the HTTP API and the web page over a study store.

use anyhow::{Context, Result};
use std::net::SocketAddr;

/// Arguments of `agora serve`.
#[derive(clap::Args, Debug)]
pub struct ServeArgs {
    /// Where the studies live (created if missing): a SQLite file (a path, or
    /// sqlite:///path) or a PostgreSQL database (postgresql://user:password@host:port/database).
    /// Default: $AGORA_STORAGE, else $AGORA_DB, else agora.db. `--db` is the same option.
    #[arg(long = "storage", visible_alias = "db", value_name = "URL")]
    storage: Option<String>,
    /// Address to listen on. The default is loopback only; give 0.0.0.0:8080 to let phones
    /// on the same network join (tokens then travel in clear over HTTP: use a trusted network
    /// or a TLS proxy).
    #[arg(long, default_value = "127.0.0.1:8080")]
    addr: SocketAddr,
    /// Seed a Social-BO thermal-comfort meeting (`comfort-demo`) with three simulated
    /// colleagues who vote on their own; join it as `you`.
    #[arg(long)]
    demo: bool,
    /// Milliseconds between the simulated colleagues' ballots (with --demo).
    #[arg(long, default_value_t = 1500)]
    bot_delay_ms: u64,
    /// Token that allows creating studies over HTTP (POST /api/studies) and listing them
    /// with their links (GET /api/studies, and the page at /?token=TOKEN); default: a
    /// fresh random one, printed at start.
    #[arg(long, env = "AGORA_ADMIN_TOKEN")]
    admin_token: Option<String>,
}

/// Run the server until Ctrl-C.
pub fn run(args: ServeArgs) -> Result<()> {
    let admin = args
        .admin_token
        .clone()
        .unwrap_or_else(agora_study::live::new_token);
    let storage = super::study::storage_url(args.storage.as_deref())?;
    let state = agora_server::AppState::open_storage(&storage, Some(admin.clone()))
        .with_context(|| format!("opening {storage}"))?;
    let base = format!("http://{}", args.addr);
    println!("agora serve: {storage} on {base}");
    println!("  API description: {base}/api/openapi.json");
    println!("  admin token (create studies over HTTP): {admin}");
    println!("  every study, with its links: {base}/?token={admin}");
    if args.demo {
        use agora_server::demo::{DEMO_STUDY, demo_spec};
        let stored = match state.store().study(DEMO_STUDY) {
            Ok(s) => {
                println!("  resuming the demo meeting `{DEMO_STUDY}` stored in {storage}");
                s
            }
            Err(_) => state
                .create_study(demo_spec())
                .map_err(|e| anyhow::anyhow!("{e}"))?,
        };
        println!();
        println!("  Demo meeting `{DEMO_STUDY}`: three simulated colleagues (ada, ben, cleo) vote");
        println!("  on office temperature and air speed; you are the fourth participant.");
        println!("  Open these in a browser:");
        println!(
            "    facilitator: {base}/?study={DEMO_STUDY}&token={}",
            stored.facilitator_token
        );
        for (p, t) in stored
            .spec
            .participants
            .iter()
            .zip(&stored.participant_tokens)
        {
            if p == "you" {
                println!("    you (vote):  {base}/?study={DEMO_STUDY}&token={t}");
            }
        }
    } else {
        let names = state.store().list().map_err(|e| anyhow::anyhow!("{e}"))?;
        if names.is_empty() {
            println!("  no studies yet: create one with `agora study create`, or run with --demo");
        } else {
            println!(
                "  studies: {} (links with tokens: `agora study tokens NAME`)",
                names.join(", ")
            );
        }
    }
    if storage.sqlite_path().is_none() {
        println!(
            "  following the database's changes: replicas of this server on the same database \
             serve the same studies"
        );
    }
    println!("Press Ctrl-C to stop.");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    rt.block_on(async move {
        if args.demo {
            tokio::spawn(agora_server::demo::run_bots(
                state.clone(),
                std::time::Duration::from_millis(args.bot_delay_ms),
            ));
        }
        agora_server::serve(state, args.addr)
            .await
            .with_context(|| format!("serving on {}", args.addr))
    })
}
