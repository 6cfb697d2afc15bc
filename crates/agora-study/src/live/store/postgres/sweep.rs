//! The SQL of sweeps ([`crate::sweep`]) on a [`PostgresStore`]: every operation is one
//! short statement or one short transaction on the store's connection. Lease times are
//! the database server's clock (`clock_timestamp()`), so workers on machines whose clocks
//! differ still agree on when a lease has run out.

use super::PostgresStore;
use super::session::{commit, read};
use crate::sweep::{CellRecord, CellState, Claim, Found, Progress, StoredPhase};

/// Milliseconds since the epoch on the database server's clock.
const NOW_MS: &str = "(EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::BIGINT";

fn count(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

impl PostgresStore {
    /// Record sweep `name` with `command`, or check that the stored one has the same
    /// command; returns what is stored when it differs.
    pub(crate) fn sweep_join(
        &self,
        name: &str,
        command: &str,
    ) -> super::StoreResult<Found<String>> {
        let (name, command) = (name.to_string(), command.to_string());
        self.call(move |c| {
            let sql = format!(
                "INSERT INTO agora_sweeps (name, command, created_ms) VALUES ($1, $2, {NOW_MS}) \
                 ON CONFLICT (name) DO NOTHING"
            );
            let made = c.client.execute(&sql, &[&name, &command]).map_err(commit)?;
            if made == 1 {
                return Ok(Found::Ok);
            }
            let row = c
                .client
                .query_one("SELECT command FROM agora_sweeps WHERE name = $1", &[&name])
                .map_err(read)?;
            let stored: String = row.get(0);
            Ok(if stored == command {
                Found::Ok
            } else {
                Found::Differs(stored)
            })
        })
    }

    /// The command of sweep `name`, or `None` when there is no such sweep.
    pub(crate) fn sweep_command(&self, name: &str) -> super::StoreResult<Option<String>> {
        let name = name.to_string();
        self.call(move |c| {
            let row = c
                .client
                .query_opt("SELECT command FROM agora_sweeps WHERE name = $1", &[&name])
                .map_err(read)?;
            Ok(row.map(|r| r.get(0)))
        })
    }

    /// The names of all sweeps, oldest first.
    pub(crate) fn sweep_names(&self) -> super::StoreResult<Vec<String>> {
        self.call(|c| {
            let rows = c
                .client
                .query(
                    "SELECT name FROM agora_sweeps ORDER BY created_ms, name COLLATE \"C\"",
                    &[],
                )
                .map_err(read)?;
            Ok(rows.iter().map(|r| r.get(0)).collect())
        })
    }

    /// Make phase `phase` of `sweep` with one pending cell per fingerprint (when `create`
    /// and it is not there yet), or check the stored one against `label` and
    /// `fingerprints`.
    pub(crate) fn sweep_phase(
        &self,
        sweep: &str,
        phase: u32,
        label: &str,
        fingerprints: &[String],
        create: bool,
    ) -> super::StoreResult<Found<StoredPhase>> {
        let (sweep, label, fps) = (sweep.to_string(), label.to_string(), fingerprints.to_vec());
        let phase = phase as i32;
        self.call(move |c| {
            let mut tx = c.client.transaction().map_err(read)?;
            if create {
                let made = tx
                    .execute(
                        "INSERT INTO agora_sweep_phases (sweep, phase, label, cells) \
                         VALUES ($1, $2, $3, $4) ON CONFLICT (sweep, phase) DO NOTHING",
                        &[&sweep, &phase, &label, &(fps.len() as i32)],
                    )
                    .map_err(read)?;
                if made == 1 {
                    tx.execute(
                        "INSERT INTO agora_sweep_cells (sweep, phase, cell, fingerprint) \
                         SELECT $1, $2, (t.i - 1)::INTEGER, t.f \
                         FROM unnest($3::TEXT[]) WITH ORDINALITY AS t(f, i)",
                        &[&sweep, &phase, &fps],
                    )
                    .map_err(read)?;
                    tx.commit().map_err(commit)?;
                    return Ok(Found::Ok);
                }
            }
            let row = tx
                .query_opt(
                    "SELECT label FROM agora_sweep_phases WHERE sweep = $1 AND phase = $2",
                    &[&sweep, &phase],
                )
                .map_err(read)?;
            let Some(row) = row else {
                return Ok(Found::Missing);
            };
            let stored_label: String = row.get(0);
            let rows = tx
                .query(
                    "SELECT fingerprint FROM agora_sweep_cells WHERE sweep = $1 AND phase = $2 \
                     ORDER BY cell",
                    &[&sweep, &phase],
                )
                .map_err(read)?;
            let stored: Vec<String> = rows.iter().map(|r| r.get(0)).collect();
            Ok(if stored_label == label && stored == fps {
                Found::Ok
            } else {
                Found::Differs((stored_label, stored))
            })
        })
    }

    /// Claim the first cell of the phase that is pending or whose lease has run out, for
    /// `worker`, leased for `lease_ms`.
    pub(crate) fn sweep_claim(
        &self,
        sweep: &str,
        phase: u32,
        worker: &str,
        lease_ms: i64,
    ) -> super::StoreResult<Option<Claim>> {
        let (sweep, worker) = (sweep.to_string(), worker.to_string());
        let phase = phase as i32;
        let sql = format!(
            "UPDATE agora_sweep_cells \
             SET state = 'running', worker = $3, claims = claims + 1, \
                 lease_until = {NOW_MS} + $4 \
             WHERE sweep = $1 AND phase = $2 AND cell = ( \
                 SELECT cell FROM agora_sweep_cells \
                 WHERE sweep = $1 AND phase = $2 \
                   AND (state = 'pending' OR (state = 'running' AND lease_until < {NOW_MS})) \
                 ORDER BY cell LIMIT 1 FOR UPDATE SKIP LOCKED) \
             RETURNING cell, claims"
        );
        self.call(move |c| {
            let row = c
                .client
                .query_opt(&sql, &[&sweep, &phase, &worker, &lease_ms])
                .map_err(commit)?;
            Ok(row.map(|r| Claim {
                cell: r.get::<_, i32>(0).max(0) as usize,
                claims: r.get::<_, i32>(1).max(0) as u32,
            }))
        })
    }

    /// Extend the leases of every cell of `sweep` that `worker` holds; returns how many.
    pub(crate) fn sweep_renew(
        &self,
        sweep: &str,
        worker: &str,
        lease_ms: i64,
    ) -> super::StoreResult<u64> {
        let (sweep, worker) = (sweep.to_string(), worker.to_string());
        let sql = format!(
            "UPDATE agora_sweep_cells SET lease_until = {NOW_MS} + $3 \
             WHERE sweep = $1 AND worker = $2 AND state = 'running'"
        );
        self.call(move |c| {
            c.client
                .execute(&sql, &[&sweep, &worker, &lease_ms])
                .map_err(commit)
        })
    }

    /// Store a cell's result (or, with `failed`, its error) unless it is done already;
    /// returns whether this call stored it.
    pub(crate) fn sweep_finish(
        &self,
        sweep: &str,
        phase: u32,
        cell: usize,
        worker: &str,
        body: &str,
        failed: bool,
    ) -> super::StoreResult<bool> {
        let (sweep, worker, body) = (sweep.to_string(), worker.to_string(), body.to_string());
        let (phase, cell) = (phase as i32, cell as i32);
        let sql = if failed {
            format!(
                "UPDATE agora_sweep_cells SET state = 'failed', error = $5, done_by = $4, \
                 done_ms = {NOW_MS}, lease_until = NULL \
                 WHERE sweep = $1 AND phase = $2 AND cell = $3 AND state <> 'done'"
            )
        } else {
            format!(
                "UPDATE agora_sweep_cells SET state = 'done', result = $5, done_by = $4, \
                 done_ms = {NOW_MS}, lease_until = NULL \
                 WHERE sweep = $1 AND phase = $2 AND cell = $3 AND state <> 'done'"
            )
        };
        self.call(move |c| {
            let n = c
                .client
                .execute(&sql, &[&sweep, &phase, &cell, &worker, &body])
                .map_err(commit)?;
            Ok(n == 1)
        })
    }

    /// How far the phase is.
    pub(crate) fn sweep_progress(&self, sweep: &str, phase: u32) -> super::StoreResult<Progress> {
        let sweep = sweep.to_string();
        let phase = phase as i32;
        self.call(move |c| {
            let row = c
                .client
                .query_one(
                    "SELECT COUNT(*), \
                     COUNT(*) FILTER (WHERE state = 'done'), \
                     COUNT(*) FILTER (WHERE state = 'running') \
                     FROM agora_sweep_cells WHERE sweep = $1 AND phase = $2",
                    &[&sweep, &phase],
                )
                .map_err(read)?;
            let failed = c
                .client
                .query_opt(
                    "SELECT cell, COALESCE(done_by, ''), COALESCE(error, '') \
                     FROM agora_sweep_cells \
                     WHERE sweep = $1 AND phase = $2 AND state = 'failed' ORDER BY cell LIMIT 1",
                    &[&sweep, &phase],
                )
                .map_err(read)?
                .map(|r| (r.get::<_, i32>(0).max(0) as usize, r.get(1), r.get(2)));
            Ok(Progress {
                cells: count(row.get(0)),
                done: count(row.get(1)),
                running: count(row.get(2)),
                failed,
            })
        })
    }

    /// The results of the phase's cells in cell order (`None` where a cell is not done).
    pub(crate) fn sweep_results(
        &self,
        sweep: &str,
        phase: u32,
    ) -> super::StoreResult<Vec<Option<String>>> {
        let sweep = sweep.to_string();
        let phase = phase as i32;
        self.call(move |c| {
            let rows = c
                .client
                .query(
                    "SELECT CASE WHEN state = 'done' THEN result END \
                     FROM agora_sweep_cells WHERE sweep = $1 AND phase = $2 ORDER BY cell",
                    &[&sweep, &phase],
                )
                .map_err(read)?;
            Ok(rows.iter().map(|r| r.get(0)).collect())
        })
    }

    /// Every cell of the sweep, by phase and cell, without results.
    pub(crate) fn sweep_cells(&self, sweep: &str) -> super::StoreResult<Vec<CellRecord>> {
        let sweep = sweep.to_string();
        self.call(move |c| {
            let rows = c
                .client
                .query(
                    "SELECT c.phase, p.label, c.cell, c.state, c.claims, c.worker, c.done_by \
                     FROM agora_sweep_cells c JOIN agora_sweep_phases p \
                       ON p.sweep = c.sweep AND p.phase = c.phase \
                     WHERE c.sweep = $1 ORDER BY c.phase, c.cell",
                    &[&sweep],
                )
                .map_err(read)?;
            Ok(rows
                .iter()
                .map(|r| CellRecord {
                    phase: r.get::<_, i32>(0).max(0) as u32,
                    label: r.get(1),
                    cell: r.get::<_, i32>(2).max(0) as usize,
                    state: CellState::parse(r.get(3)),
                    claims: r.get::<_, i32>(4).max(0) as u32,
                    worker: r.get(5),
                    done_by: r.get(6),
                })
                .collect())
        })
    }
}
