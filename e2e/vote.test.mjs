// Browser test of agora's web page (run by e2e/run.sh, which starts the server).
//
// A facilitator (laptop-sized window) and three participants (phone-sized windows) open
// their links in one headless Chromium. The participants vote by clicking the page's
// buttons, through public rounds and at least one private (secret) round, until the
// facilitator's view shows a recommendation. Checked on the way: the facilitator's view
// updates live as people vote, a participant can change a vote, the facilitator can close
// a round, and no participant's page ever receives or shows another participant's private
// vote; the studies index (admin token) lists the meeting with its state and links; a
// round with a time limit counts down on both views and closes by itself; the belief
// panel shows the welfare and each person's estimated utility; options show their media
// (a candidate's picture or description, and renderings posted for a box study's options).
// Screenshots of every view go to $AGORA_E2E_OUT (target/e2e).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

const BASE = process.env.AGORA_E2E_BASE;
const ADMIN = process.env.AGORA_E2E_ADMIN;
const OUT = process.env.AGORA_E2E_OUT || 'target/e2e';
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const STUDY = 'e2e-meeting';
const PEOPLE = ['ann', 'bob', 'cy'];
// Each simulated person prefers the option whose temperature is nearer their ideal.
const IDEAL = { ann: 21, bob: 24, cy: 28 };
const WAIT = 15000; // ms for any one live update to show

function log(...a) {
  console.log(`[e2e ${((Date.now() - T0) / 1000).toFixed(1)}s]`, ...a);
}
const T0 = Date.now();

async function api(path, token, body) {
  const res = await fetch(BASE + path, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let json = null;
  try { json = JSON.parse(text); } catch { /* not JSON */ }
  return { status: res.status, json, text };
}

async function waitHealthy() {
  for (let i = 0; i < 100; i++) {
    try {
      const r = await fetch(BASE + '/healthz');
      if (r.ok) return;
    } catch { /* not up yet */ }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`the server at ${BASE} did not answer /healthz within 10 s`);
}

function temperature(option) {
  const p = option.params.find(([name]) => name === 'temperature');
  return Number(p[1]);
}

// The button a person clicks on a pair: their nearer option, or can't tell on a tie.
function pick(person, q) {
  const d = q.options.map((o) => Math.abs(temperature(o) - IDEAL[person]));
  if (Math.abs(d[0] - d[1]) < 0.5) return "Can't tell";
  return `Prefer ${q.options[d[0] < d[1] ? 0 : 1].label}`;
}

test('a facilitator and three participants vote publicly and privately to a recommendation', { timeout: 300000 }, async () => {
  assert.ok(BASE && ADMIN, 'AGORA_E2E_BASE and AGORA_E2E_ADMIN must be set (run e2e/run.sh)');
  mkdirSync(OUT, { recursive: true });
  await waitHealthy();

  // The study: Social BO over temperature and air speed, for ann, bob and cy.
  const created = await api('/api/studies', ADMIN, {
    name: STUDY,
    description: 'Meeting-room comfort: which temperature and air speed suit the three of us?',
    space: {
      kind: 'box',
      params: [
        { type: 'real', name: 'temperature', lo: 15, hi: 35 },
        { type: 'real', name: 'air speed', lo: 0.3, hi: 1.5 },
      ],
    },
    method: { name: 'social', init_pairs: 2, candidates: 32 },
    seed: 5,
    participants: PEOPLE,
  });
  assert.equal(created.status, 201, `creating the study: ${created.text}`);
  const FAC = created.json.facilitator_token;
  const TOK = created.json.participant_tokens;
  const link = (t) => `${BASE}/?study=${STUDY}&token=${t}`;

  const profile = mkdtempSync(join(tmpdir(), 'agora-e2e-profile-'));
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
      '--disable-dev-shm-usage',
    ],
    env: { ...process.env, HOME: profile, XDG_CONFIG_HOME: profile, XDG_CACHE_HOME: profile },
  });
  const problems = [];
  try {
    // Facilitator on a laptop, participants on phones; one context each (separate tabs).
    const facCtx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const fac = await facCtx.newPage();
    const pages = {};
    const privateLeaks = [];
    for (const person of PEOPLE) {
      const ctx = await browser.newContext({
        viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true,
      });
      const page = await ctx.newPage();
      // Everything the participant's page is told: no private ballot but their own.
      page.on('response', async (res) => {
        const u = new URL(res.url());
        if (u.pathname !== `/api/studies/${STUDY}` || res.request().method() !== 'GET') return;
        try {
          const d = await res.json();
          const q = d.status && d.status.pending;
          if (q && q.channel === 'private') {
            const others = Object.keys(q.ballots).filter((n) => n !== person);
            if (others.length) privateLeaks.push(`${person} received the private ballots of ${others.join(', ')}`);
          }
        } catch { /* a body read after navigation; not a status */ }
      });
      pages[person] = page;
    }
    for (const [who, page] of [['facilitator', fac], ...PEOPLE.map((p) => [p, pages[p]])]) {
      page.on('pageerror', (e) => problems.push(`${who}: page error: ${e.message}`));
      page.on('console', (m) => {
        if (m.type() === 'error' && !/plot\.svg|404/.test(m.text())) problems.push(`${who}: console: ${m.text()}`);
      });
    }

    await fac.goto(link(FAC));
    await fac.waitForSelector('[data-role=facilitator]', { timeout: WAIT });
    for (const person of PEOPLE) {
      await pages[person].goto(link(TOK[person]));
      await pages[person].waitForSelector('[data-role=participant]', { timeout: WAIT });
      const who = await pages[person].locator('.eyebrow strong').textContent();
      assert.equal(who, person, `${person}'s page names them`);
    }
    // Live updates are on (server-sent events), not the polling fallback.
    await fac.locator('#live.on').waitFor({ timeout: WAIT });
    log('pages open, live updates on');

    const shots = new Set();
    let privateByClicks = 0;
    let publicByClicks = 0;
    let closedByFacilitator = false;
    let changedVote = false;
    for (let round = 0; round < 24; round++) {
      const st = (await api(`/api/studies/${STUDY}`, FAC)).json.status;
      const q = st.pending;
      assert.ok(q, 'the study always has an open question');
      assert.equal(q.kind, 'group_vote', 'Social BO asks group votes');
      const id = q.query_id;
      const sel = `section.question[data-query="${id}"]`;
      await fac.waitForSelector(sel, { timeout: WAIT });
      const fq = fac.locator(sel);
      assert.equal(await fq.getAttribute('data-channel'), q.channel);
      // Close one public round early from the facilitator's view, after two votes.
      const closeThis = !closedByFacilitator && q.channel === 'public' && publicByClicks >= 1;
      const voters = closeThis ? PEOPLE.slice(0, 2) : PEOPLE;
      log(`question ${id}: ${q.channel}, options`, q.options.map((o) => `${o.label}=${o.params.map((p) => p[1]).join('/')}`).join(' '),
        closeThis ? '(the facilitator will close it)' : '');

      for (const [k, person] of voters.entries()) {
        const page = pages[person];
        await page.waitForSelector(sel, { timeout: WAIT });
        const pq = page.locator(sel);
        if (q.channel === 'private') {
          await pq.locator('[data-testid=secret-note]').waitFor({ timeout: WAIT });
          const note = await pq.locator('[data-testid=secret-note]').textContent();
          assert.match(note, /Secret ballot/);
          assert.match(note, /only the facilitator sees your vote/);
          // Others have voted, but this page shows no choice: only its own, once cast.
          assert.equal(await pq.locator('button[aria-pressed=true]').count(), 0,
            `${person}'s page shows a choice before ${person} voted`);
          const text = await page.locator('main').innerText();
          for (const other of PEOPLE.filter((p) => p !== person)) {
            assert.ok(!new RegExp(`\\b${other}\\b`).test(text), `${person}'s page names ${other} on a private round`);
          }
        }
        let button = pick(person, q);
        if (!changedVote && q.channel === 'public') {
          // Change of mind: first the other option, then the real choice; then a duplicate.
          const other = button === 'Prefer A' ? 'Prefer B' : 'Prefer A';
          await pq.getByRole('button', { name: other }).click();
          await pq.locator('[data-testid=vote-status]', { hasText: 'Vote recorded' }).waitFor({ timeout: WAIT });
          await pq.getByRole('button', { name: button }).click();
          await page.locator(`${sel} button[aria-pressed=true]`, { hasText: button }).waitFor({ timeout: WAIT });
          await pq.getByRole('button', { name: button }).click();
          await page.locator('.notice', { hasText: 'already your ballot' }).waitFor({ timeout: WAIT });
          changedVote = true;
          log(`${person} changed their vote to ${button} (and sent it twice: a duplicate)`);
        } else {
          await pq.getByRole('button', { name: button }).click();
        }
        const last = k === voters.length - 1 && !closeThis;
        if (!last) {
          // The participant sees the vote recorded and the count; the facilitator sees
          // who voted at once (live), without reloading.
          const status = pq.locator('[data-testid=vote-status]');
          await status.filter({ hasText: `Vote recorded` }).waitFor({ timeout: WAIT });
          await status.filter({ hasText: `(${k + 1} of 3 voted)` }).waitFor({ timeout: WAIT });
          await fac.locator(`${sel} li[data-voter="${person}"][data-voted=yes]`).waitFor({ timeout: WAIT });
          await fac.locator(`${sel} [data-testid=voted-count]`, { hasText: `${k + 1} of 3 voted` }).waitFor({ timeout: WAIT });
          if (q.channel === 'private') {
            // The facilitator's screen (often projected) hides the secret ballots by default.
            const chip = await fac.locator(`${sel} li[data-voter="${person}"] .state`).textContent();
            assert.equal(chip, 'voted');
          } else {
            const chip = await fac.locator(`${sel} li[data-voter="${person}"] .state`).textContent();
            assert.ok(['A', 'B', "can't tell"].includes(chip), `public ballot shown as ${chip}`);
          }
          if (!shots.has(`participant-${q.channel}`)) {
            // Made for a phone: nothing wider than the screen.
            const wide = await page.evaluate(() => document.documentElement.scrollWidth);
            assert.ok(wide <= 390, `${person}'s page is ${wide} px wide on a 390 px phone`);
            await page.mouse.move(0, 0); // no hover look on a phone's screenshot
            await page.screenshot({ path: join(OUT, `participant-${q.channel}.png`), fullPage: true });
            shots.add(`participant-${q.channel}`);
            log(`screenshot participant-${q.channel}.png (${person})`);
          }
          if (q.channel === 'private' && k === 1 && !shots.has('facilitator-private')) {
            await fac.getByRole('button', { name: 'Show the secret ballots' }).click();
            await fac.locator(`${sel} [data-testid=tally]`).waitFor({ timeout: WAIT });
            await fac.mouse.move(0, 0);
            await fac.screenshot({ path: join(OUT, 'facilitator-private.png'), fullPage: true });
            await fac.getByRole('button', { name: 'Hide the secret ballots' }).click();
            shots.add('facilitator-private');
            log('screenshot facilitator-private.png');
          }
        }
      }
      if (closeThis) {
        await fac.locator(`${sel} li[data-voter="${voters[1]}"][data-voted=yes]`).waitFor({ timeout: WAIT });
        await fac.getByRole('button', { name: 'Close round' }).click();
        closedByFacilitator = true;
        log(`the facilitator closed question ${id} (cy did not vote)`);
      }
      // The round is over: every view moves on to the next question by itself.
      await fac.waitForFunction((qid) => {
        const s = document.querySelector('section.question');
        return s && s.getAttribute('data-query') !== String(qid);
      }, id, { timeout: WAIT });
      for (const person of PEOPLE) {
        await pages[person].waitForFunction((qid) => {
          const s = document.querySelector('section.question');
          return s && s.getAttribute('data-query') !== String(qid);
        }, id, { timeout: WAIT });
      }
      if (!closeThis && q.channel === 'private') privateByClicks++;
      if (!closeThis && q.channel === 'public') publicByClicks++;

      const ready = (await fac.locator('#recommendation').getAttribute('data-ready')) === 'yes';
      log(`question ${id} done: public ${publicByClicks}, private ${privateByClicks} by clicks; recommendation ${ready ? 'shown' : 'not yet'}`);
      if (ready && privateByClicks >= 1 && publicByClicks >= 2 && closedByFacilitator) break;
    }

    assert.ok(privateByClicks >= 1, 'at least one private round completed by clicks');
    assert.ok(publicByClicks >= 2, 'at least two public rounds completed by clicks');
    assert.ok(closedByFacilitator, 'the facilitator closed a round');
    await fac.locator('#recommendation[data-ready=yes] table.params').waitFor({ timeout: WAIT });
    const rec = await fac.locator('#recommendation').innerText();
    assert.match(rec, /temperature/);
    assert.match(rec, /air speed/);
    const st = (await api(`/api/studies/${STUDY}`, FAC)).json.status;
    assert.equal(await fac.locator('[data-testid=private-rounds]').textContent(), String(st.private_rounds));
    assert.equal(await fac.locator('[data-testid=answered]').textContent(), String(st.answered));
    // The belief panel: the model's welfare at the open pair and the recommendation, with
    // each person's estimated utility beside it, as the API gives it.
    const table = fac.locator('#belief-table');
    await table.locator('tr[data-option=recommended]').waitFor({ timeout: WAIT });
    const heads = await table.locator('thead th').allTextContents();
    assert.deepEqual(heads, ['Option', 'welfare (mean ± sd)', ...PEOPLE]);
    const bv = (await api(`/api/studies/${STUDY}/belief`, FAC)).json;
    const recRow = bv.options.find((o) => o.label === 'recommended');
    assert.equal((await table.locator('tr[data-option=recommended] td').count()), 1 + PEOPLE.length);
    assert.ok(Number.isFinite(recRow.mean) && recRow.people.ann.length === 2);
    // The updates came over the event stream all along (no fallback to polling).
    assert.equal(await fac.locator('#live').getAttribute('class'), 'live on');
    // The log link downloads the CSV.
    const href = await fac.getByRole('link', { name: 'Download the log (CSV)' }).getAttribute('href');
    const csv = await fetch(new URL(href, BASE));
    assert.equal(csv.status, 200);
    assert.ok((await csv.text()).split('\n').length > 5, 'the CSV log has rows');
    // Wait for the plot to load or to be reported missing, then take the final screenshot.
    await fac.waitForFunction(() => {
      const img = document.querySelector('img.plot');
      return img && img.complete;
    }, null, { timeout: WAIT });
    await fac.screenshot({ path: join(OUT, 'facilitator.png'), fullPage: true });
    log('screenshot facilitator.png');
    // The studies index (the server's admin token): the meeting's row, its state and its
    // links; the study's name opens the facilitator's view. A wrong token is told so.
    const admin = await facCtx.newPage();
    admin.on('pageerror', (e) => problems.push(`admin: page error: ${e.message}`));
    await admin.goto(`${BASE}/?token=${ADMIN}`);
    const row = admin.locator(`#studies tr[data-study="${STUDY}"]`);
    await row.waitFor({ timeout: WAIT });
    const after = (await api(`/api/studies/${STUDY}`, FAC)).json.status;
    assert.equal(await row.locator('td').nth(2).textContent(), String(after.answered));
    assert.match(await row.locator('[data-testid=state]').textContent(), /^question \d+ open: \d of 3 voted$/);
    for (const person of PEOPLE) {
      const href = await row.locator(`a[data-participant="${person}"]`).getAttribute('href');
      assert.equal(new URL(href, BASE).href, new URL(link(TOK[person])).href, `${person}'s link in the index`);
    }
    await admin.screenshot({ path: join(OUT, 'index.png'), fullPage: true });
    log('screenshot index.png');
    await row.getByRole('link', { name: STUDY }).click();
    await admin.waitForSelector('[data-role=facilitator]', { timeout: WAIT });
    assert.equal(new URL(admin.url()).searchParams.get('token'), FAC);
    await admin.goto(`${BASE}/?token=not-the-admin`);
    await admin.getByRole('heading', { name: 'Cannot list the studies' }).waitFor({ timeout: WAIT });
    await admin.close();
    // A round with a time limit: both views count down, and the round closes by itself
    // (missing votes as can't tell) with nobody pressing anything.
    const timed = await api('/api/studies', ADMIN, {
      name: 'e2e-timed',
      description: 'A round with a time limit',
      space: { kind: 'box', params: [{ type: 'real', name: 'temperature', lo: 15, hi: 35 }] },
      method: { name: 'group-pairs' },
      participants: PEOPLE,
      round_seconds: 12, // long enough for two page loads on a busy machine
    });
    assert.equal(timed.status, 201, `creating the timed study: ${timed.text}`);
    const tLink = (t) => `${BASE}/?study=e2e-timed&token=${t}`;
    const tFac = await facCtx.newPage();
    tFac.on('pageerror', (e) => problems.push(`timed facilitator: page error: ${e.message}`));
    await tFac.goto(tLink(timed.json.facilitator_token));
    const tAnn = pages.ann;
    await tAnn.goto(tLink(timed.json.participant_tokens.ann));
    for (const p of [tFac, tAnn]) {
      await p.locator('[data-testid=countdown]').waitFor({ timeout: WAIT });
      assert.match(await p.locator('[data-testid=countdown]').textContent(), /^Closes by itself in 0:(0\d|1[0-2])$/);
    }
    const first = await tFac.locator('section.question').getAttribute('data-query');
    // Someone in the room asks "what about 21.5 degrees?": the facilitator puts it into the
    // next question.
    await tFac.locator('#suggest-temperature').fill('21.5');
    await tFac.getByRole('button', { name: 'Ask it next' }).click();
    await tFac.locator('#notice', { hasText: 'in the next question' }).waitFor({ timeout: WAIT });
    await tAnn.getByRole('button', { name: 'Prefer A' }).click();
    await tAnn.locator('[data-testid=vote-status]').filter({ hasText: 'Vote recorded' }).waitFor({ timeout: WAIT });
    await tFac.screenshot({ path: join(OUT, 'deadline-facilitator.png'), fullPage: true });
    await tAnn.mouse.move(0, 0);
    await tAnn.screenshot({ path: join(OUT, 'deadline-participant.png'), fullPage: true });
    log('screenshots deadline-facilitator.png, deadline-participant.png');
    for (const p of [tFac, tAnn]) {
      await p.waitForFunction((qid) => {
        const s = document.querySelector('section.question');
        return s && s.getAttribute('data-query') !== qid;
      }, first, { timeout: 12000 + WAIT });
    }
    const tEvents = (await api('/api/studies/e2e-timed/events', timed.json.facilitator_token)).json.events;
    const tClosed = tEvents.find((e) => e.type === 'answered' && String(e.answer.query_id) === first);
    assert.ok(tClosed, `round ${first} was not answered: ${JSON.stringify(tEvents)}`);
    assert.equal(tClosed.by, 'deadline');
    assert.deepEqual(tClosed.answer.kind.votes, [0, null, null]);
    log('the timed round closed by itself');
    assert.ok(tEvents.some((e) => e.type === 'enqueued'), 'no enqueued event');
    const next = (await api('/api/studies/e2e-timed/query', timed.json.facilitator_token)).json.pending;
    assert.ok(next.options.some((o) => o.params[0][1] === 21.5),
      `the suggested 21.5 is not in the next question: ${JSON.stringify(next.options)}`);
    await tFac.locator('section.question', { hasText: '21.5' }).waitFor({ timeout: WAIT });
    log('the suggested option is in the next question');
    await tFac.close();
    // Media: a candidate set whose options carry a picture (a file kept in the study) or a
    // description, and a box study whose open options get renderings posted with the
    // renderer's token; the phone and the facilitator's view show them, images loaded.
    const swatch = (fill) => Buffer.from(
      `<svg xmlns="http://www.w3.org/2000/svg" width="120" height="60"><rect width="120" height="60" fill="${fill}"/></svg>`,
    ).toString('base64');
    const cands = await api('/api/studies', ADMIN, {
      name: 'e2e-media',
      description: 'Which colour for the meeting room?',
      space: { kind: 'candidates', names: ['teal', 'sand', 'plum'], features: [[0.1, 0.2], [0.8, 0.7], [0.5, 0.9]] },
      media: [
        { type: 'file', content_type: 'image/svg+xml', data: swatch('#1b998b') },
        { type: 'file', content_type: 'image/svg+xml', data: swatch('#e9c46a') },
        { type: 'text', text: 'A deep plum, matt finish' },
      ],
      method: { name: 'social' },
      participants: PEOPLE,
    });
    assert.equal(cands.status, 201, `creating the media study: ${cands.text}`);
    const mLink = (study, t) => `${BASE}/?study=${study}&token=${t}`;
    const loaded = (page) => page.waitForFunction(() => {
      const imgs = [...document.querySelectorAll('img.media-img')];
      return imgs.length > 0 && imgs.every((i) => i.complete && i.naturalWidth > 0);
    }, null, { timeout: WAIT });
    const mFac = await facCtx.newPage();
    mFac.on('pageerror', (e) => problems.push(`media facilitator: page error: ${e.message}`));
    await mFac.goto(mLink('e2e-media', cands.json.facilitator_token));
    await pages.ann.goto(mLink('e2e-media', cands.json.participant_tokens.ann));
    const mq = (await api('/api/studies/e2e-media/query', cands.json.facilitator_token)).json.pending;
    const shown = mq.options.filter((o) => o.media).length;
    assert.ok(shown >= 1, 'the open pair has media');
    for (const p of [mFac, pages.ann]) {
      await p.locator('[data-testid=media]').first().waitFor({ timeout: WAIT });
      assert.equal(await p.locator('[data-testid=media]').count(), shown);
      if (mq.options.some((o) => o.media && o.media.type === 'file')) await loaded(p);
      if (mq.options.some((o) => o.media && o.media.type === 'text')) {
        await p.getByText('A deep plum, matt finish').first().waitFor({ timeout: WAIT });
      }
    }
    await mFac.screenshot({ path: join(OUT, 'media-facilitator.png'), fullPage: true });
    await pages.ann.mouse.move(0, 0);
    await pages.ann.screenshot({ path: join(OUT, 'media-participant.png'), fullPage: true });
    log('screenshots media-facilitator.png, media-participant.png');
    const boxed = await api('/api/studies', ADMIN, {
      name: 'e2e-render',
      description: 'Rendered designs',
      space: { kind: 'box', params: [{ type: 'real', name: 'hue', lo: 0, hi: 360 }] },
      method: { name: 'group-pairs' },
      participants: PEOPLE,
    });
    assert.equal(boxed.status, 201, `creating the rendered study: ${boxed.text}`);
    await mFac.goto(mLink('e2e-render', boxed.json.facilitator_token));
    await pages.ann.goto(mLink('e2e-render', boxed.json.participant_tokens.ann));
    await pages.ann.locator('section.question').waitFor({ timeout: WAIT });
    const rq = (await api('/api/studies/e2e-render/query', boxed.json.facilitator_token)).json.pending;
    for (const [i, o] of rq.options.entries()) {
      const hue = Number(o.params[0][1]);
      const res = await fetch(`${BASE}/api/studies/e2e-render/media?query_id=${rq.query_id}&option=${i}`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${boxed.json.renderer_token}`, 'Content-Type': 'image/svg+xml' },
        body: Buffer.from(swatch(`hsl(${hue.toFixed(0)} 70% 50%)`), 'base64'),
      });
      assert.equal(res.status, 200, `posting rendering ${i}: ${await res.text()}`);
    }
    // The pages were open before the renderings came: the live update brings them.
    for (const p of [mFac, pages.ann]) {
      await p.locator('img.media-img').nth(rq.options.length - 1).waitFor({ timeout: WAIT });
      await loaded(p);
    }
    await mFac.screenshot({ path: join(OUT, 'render-facilitator.png'), fullPage: true });
    await pages.ann.screenshot({ path: join(OUT, 'render-participant.png'), fullPage: true });
    log('screenshots render-facilitator.png, render-participant.png');
    await mFac.close();
    for (const s of ['participant-public', 'participant-private']) assert.ok(shots.has(s), `screenshot ${s} taken`);
    assert.deepEqual(privateLeaks, [], 'no participant page received another participant\'s private vote');
    assert.deepEqual(problems, [], 'no script errors on the pages');
    log(`done: ${st.answered} questions answered (${st.public_rounds} public, ${st.private_rounds} private)`);
  } finally {
    await browser.close();
    rmSync(profile, { recursive: true, force: true });
  }
});
