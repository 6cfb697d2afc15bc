// agora's web page: the facilitator's view of a meeting and a participant's voting view.
// Plain JavaScript, no framework, nothing loaded from elsewhere. The page is opened as
// /?study=NAME&token=TOKEN; the token decides the role (the API says which). Opened as
// /?token=ADMIN_TOKEN (the server's admin token, no study) it lists every study with its links.
'use strict';
(function () {
  var params = new URLSearchParams(location.search);
  var study = params.get('study') || '';
  var token = params.get('token') || '';
  var app = document.getElementById('app');
  var liveEl = document.getElementById('live');
  var base = '/api/studies/' + encodeURIComponent(study);

  var data = null; // the last GET /api/studies/{name}: {you, seq, status}
  var lastKey = ''; // its JSON, to skip identical re-renders
  var error = ''; // shown inline until the next successful action
  var notice = ''; // a one-off message (a new question, a recorded answer)
  var busy = false; // a POST is in flight
  var lastQueryId = null;
  var drafts = {}; // input id -> typed text, kept across re-renders
  var showSecret = false; // facilitator: reveal the private ballots
  var noticeTimer = null;

  function setNotice(text) {
    notice = text || '';
    clearTimeout(noticeTimer);
    if (notice) noticeTimer = setTimeout(function () { notice = ''; render(); }, 8000);
  }

  // ---- small helpers -------------------------------------------------------------------

  // Build an element: h('p', {class: 'x', 'data-action': 'vote'}, 'text', child, [more]).
  // No listeners on elements: clicks, submits and typing are handled once on the page
  // (see `wire`), so a re-render can patch the page in place (`morph`) without losing a
  // tap that lands while someone else's vote arrives.
  function h(tag, attrs) {
    var el = document.createElement(tag);
    var a = attrs || {};
    Object.keys(a).forEach(function (k) {
      var v = a[k];
      if (v === null || v === undefined || v === false) return;
      if (k === 'class') el.className = v;
      else if (k === 'text') el.textContent = v;
      else if (k === 'value') el.value = v;
      else el.setAttribute(k, v === true ? '' : String(v));
    });
    for (var i = 2; i < arguments.length; i++) append(el, arguments[i]);
    return el;
  }
  function append(el, c) {
    if (c === null || c === undefined || c === false) return;
    if (Array.isArray(c)) c.forEach(function (x) { append(el, x); });
    else el.appendChild(typeof c === 'object' ? c : document.createTextNode(String(c)));
  }

  function fmt(v) {
    if (typeof v !== 'number') return String(v);
    if (!isFinite(v)) return String(v);
    if (Number.isInteger(v)) return String(v);
    var a = Math.abs(v);
    if (a !== 0 && (a < 1e-3 || a >= 1e6)) return v.toExponential(3);
    return String(Number(v.toPrecision(4)));
  }

  function choiceLabel(choice, options) {
    if (choice === null || choice === undefined) return "can't tell";
    var o = options[choice];
    return o ? o.label : '#' + choice;
  }

  function setLive(text, cls) {
    liveEl.textContent = text;
    liveEl.className = 'live ' + (cls || '');
  }

  // ---- the API ---------------------------------------------------------------------------

  function api(path, body) {
    var init = { headers: { Authorization: 'Bearer ' + token }, cache: 'no-store' };
    if (body !== undefined) {
      init.method = 'POST';
      init.headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    return fetch(base + path, init).then(
      function (res) {
        return res.text().then(function (text) {
          var json = null;
          try { json = JSON.parse(text); } catch (_) { /* not JSON */ }
          if (!res.ok) {
            var e = new Error(json && json.error && json.error.message
              ? json.error.message
              : 'The server answered ' + res.status + ' ' + res.statusText + '.');
            e.status = res.status;
            e.code = json && json.error ? json.error.code : '';
            throw e;
          }
          return json;
        });
      },
      function (e) {
        var err = new Error('Cannot reach the agora server (' + e.message + '). Is it still running?');
        err.offline = true;
        throw err;
      });
  }

  var inflight = null;
  var again = false;
  function refresh() {
    if (inflight) { again = true; return inflight; }
    inflight = api('').then(function (d) {
      if (typeof d.now_ms === 'number') clockOffset = d.now_ms - Date.now();
      delete d.now_ms; // not part of the state: a new clock reading alone re-renders nothing
      var recovered = error && error.indexOf('Cannot reach') === 0;
      if (recovered) error = '';
      var key = JSON.stringify(d);
      if (key !== lastKey || recovered) {
        lastKey = key;
        var q = d.status.pending;
        // A participant waiting on their phone needs to notice that the question changed.
        if (data && d.you.role === 'participant' && lastQueryId !== null &&
            (!q || q.query_id !== lastQueryId)) {
          setNotice(q ? 'The last round is closed: here is a new question.' : 'The last round is closed.');
        }
        // Kept while no question is open (the next one is being computed, or stored by
        // another server), so that the next question is announced as new.
        if (q) lastQueryId = q.query_id;
        // Each option knows its place, for the address of its media file.
        if (q) q.options.forEach(function (o, i) { o.query_id = q.query_id; o.index = i; });
        data = d;
        render();
        if (d.you.role === 'facilitator') loadBelief(d.seq);
      }
    }, function (e) {
      if (!data) { fatal(e); return; }
      error = e.message;
      if (e.offline) setLive('Offline: retrying', 'off');
      render();
    }).then(function () {
      inflight = null;
      if (again) { again = false; return refresh(); }
    });
    return inflight;
  }

  // Live updates: the server-sent "changed" events; polling every 3 s if they fail.
  var pollTimer = null;
  function startPolling() {
    if (pollTimer) return;
    pollTimer = setInterval(refresh, 3000);
    setLive('Updating every 3 s', 'poll');
  }
  function stopPolling() {
    if (!pollTimer) return;
    clearInterval(pollTimer);
    pollTimer = null;
  }
  function connect() {
    if (!window.EventSource) { startPolling(); return; }
    var es = new EventSource(base + '/stream?token=' + encodeURIComponent(token));
    es.addEventListener('changed', function () {
      stopPolling();
      setLive('Live', 'on');
      refresh();
    });
    es.onerror = function () { startPolling(); };
  }

  // Run a POST, then show its outcome and the new state.
  function act(run, done) {
    if (busy) return;
    busy = true;
    error = '';
    setNotice('');
    render();
    run().then(function (r) {
      setNotice(done ? done(r) : '');
    }, function (e) {
      error = e.message;
      if (e.status === 409) error += ' The page now shows the open question.';
    }).then(function () {
      busy = false;
      lastKey = '';
      return refresh();
    }).then(function () {
      render();
    });
  }

  function castBallot(q, ballot) {
    act(function () {
      return api('/ballot', { query_id: q.query_id, ballot: ballot });
    }, function (r) {
      return r.outcome === 'duplicate' ? 'That is already your ballot.' : '';
    });
  }
  function answer(q, kind, what) {
    act(function () {
      return api('/answer', { query_id: q.query_id, kind: kind });
    }, function (r) {
      return r.outcome === 'duplicate' ? 'That answer was already recorded.' : what + ' recorded. Thank you!';
    });
  }
  function closeRound(q) {
    act(function () {
      return api('/close', { query_id: q.query_id });
    }, function () { return 'Round closed.'; });
  }

  // ---- pieces of the views ---------------------------------------------------------------

  // Always in the page (hidden when empty), so that what follows keeps its place and
  // screen readers announce the text when it changes.
  function errorBox() {
    return h('div', { id: 'error', class: 'error', role: 'alert', hidden: !error }, error);
  }
  function noticeBox() {
    return h('div', { id: 'notice', class: 'notice', role: 'status', hidden: !notice }, notice);
  }

  function channelBadge(channel) {
    if (channel === 'private') return h('span', { class: 'badge private' }, 'Private');
    if (channel === 'public') return h('span', { class: 'badge public' }, 'Public');
    return null;
  }

  function paramTable(ps) {
    return h('table', { class: 'params' },
      h('tbody', null, ps.map(function (p) {
        return h('tr', null, h('th', { scope: 'row' }, p[0]), h('td', null, fmt(p[1])));
      })));
  }

  // How an option looks or sounds: its description, its linked image (or the link), or
  // its image or sound file (served with the study's token; the server checked its type).
  var IMAGE_URL = /\.(png|jpe?g|gif|webp|svg|avif)([?#].*)?$/i;
  function mediaBlock(opt) {
    var m = opt.media;
    if (!m) return null;
    var alt = 'What option ' + opt.label + ' looks like';
    if (m.type === 'text') return h('p', { class: 'media media-text', 'data-testid': 'media' }, m.text);
    if (m.type === 'url') {
      return h('a', { class: 'media media-link', 'data-testid': 'media', href: m.url, target: '_blank', rel: 'noopener noreferrer' },
        IMAGE_URL.test(m.url) ? h('img', { src: m.url, alt: alt, referrerpolicy: 'no-referrer', loading: 'lazy' }) : m.url);
    }
    if (m.type === 'file' && opt.query_id !== undefined) {
      var src = '/api/studies/' + encodeURIComponent(study) + '/media/' + opt.query_id + '/' + opt.index +
        '?token=' + encodeURIComponent(token);
      if (m.content_type.indexOf('audio/') === 0) {
        return h('audio', { class: 'media media-audio', 'data-testid': 'media', controls: true, preload: 'none', src: src, 'aria-label': 'How option ' + opt.label + ' sounds' });
      }
      return h('img', { class: 'media media-img', 'data-testid': 'media', src: src, alt: alt });
    }
    return null;
  }

  function optionCard(opt, extra, chosen) {
    return h('article', {
      class: 'card option' + (chosen ? ' chosen' : ''),
      'aria-label': 'Option ' + opt.label,
      'data-option': opt.label,
    },
    h('h3', { class: 'option-label' }, 'Option ', h('span', { class: 'letter' }, opt.label)),
    mediaBlock(opt),
    paramTable(opt.params),
    extra);
  }

  function numberInput(id, label, placeholder) {
    var input = h('input', {
      id: id, type: 'number', step: 'any', inputmode: 'decimal', required: true,
      placeholder: placeholder || '', value: drafts[id] !== undefined ? drafts[id] : '',
    });
    return h('div', { class: 'field' }, h('label', { for: id }, label), input);
  }
  function readNumber(id, what) {
    var el = document.getElementById(id);
    var v = el ? el.value.trim() : '';
    var x = Number(v);
    if (v === '' || !isFinite(x)) {
      error = 'Please enter a number for ' + what + '.';
      render();
      return null;
    }
    return x;
  }

  // A/B/can't-tell buttons for `action` (vote: a ballot; compare: an answer); `chosen` is
  // the current choice (undefined: none yet).
  function pairButtons(q, action, chosen) {
    var cards = q.options.map(function (o, i) {
      var pressed = chosen === i;
      return optionCard(o, h('button', {
        id: 'pick-' + q.query_id + '-' + i,
        class: 'vote' + (pressed ? ' pressed' : ''),
        'aria-pressed': pressed ? 'true' : 'false',
        disabled: busy,
        'data-action': action, 'data-query': q.query_id, 'data-choice': i,
      }, 'Prefer ' + o.label), pressed);
    });
    var tie = chosen === null;
    return [
      h('div', { class: 'options' }, cards),
      h('button', {
        id: 'pick-' + q.query_id + '-tie',
        class: 'vote tie' + (tie ? ' pressed' : ''),
        'aria-pressed': tie ? 'true' : 'false',
        disabled: busy,
        'data-action': action, 'data-query': q.query_id, 'data-choice': 'tie',
      }, "Can't tell"),
    ];
  }

  function valueId(q, i) { return 'value-' + q.query_id + '-' + i; }

  function answerControls(q) {
    if (q.kind === 'compare') return pairButtons(q, 'compare', undefined);
    if (q.kind === 'evaluate') {
      return h('form', { class: 'values', 'data-action': 'values', 'data-query': q.query_id },
      h('div', { class: 'options' }, q.options.map(function (o, i) {
        return optionCard(o, numberInput(valueId(q, i), 'Value of option ' + o.label, 'measured value'));
      })),
      h('button', { type: 'submit', class: 'vote primary', disabled: busy }, 'Submit values'));
    }
    return null;
  }

  // A group vote with a time limit shows a countdown (ticked by `tickCountdowns`), on the
  // server's clock: `clockOffset` is its time minus this device's, from the last status.
  var clockOffset = 0;
  function countdownText(deadline) {
    var left = Math.ceil((deadline - (Date.now() + clockOffset)) / 1000);
    if (left <= 0) return 'Time is up: the round is closing…';
    var hrs = Math.floor(left / 3600), min = Math.floor(left / 60) % 60, sec = left % 60;
    var two = function (n) { return (n < 10 ? '0' : '') + n; };
    return 'Closes by itself in ' + (hrs ? hrs + ':' + two(min) : String(min)) + ':' + two(sec);
  }
  function countdown(q) {
    if (typeof q.deadline_ms !== 'number') return null;
    return h('p', { class: 'countdown', role: 'timer', 'data-deadline': q.deadline_ms, 'data-testid': 'countdown' },
      countdownText(q.deadline_ms));
  }
  function tickCountdowns() {
    document.querySelectorAll('[data-deadline]').forEach(function (el) {
      var t = countdownText(Number(el.getAttribute('data-deadline')));
      if (el.textContent !== t) el.textContent = t;
    });
  }

  function votedLine(q) {
    return q.voted.length + ' of ' + q.asked.length + (q.kind === 'group_rate' ? ' rated' : ' voted');
  }

  // ---- the facilitator's view ------------------------------------------------------------

  // The plot reloads when the log grows (its URL carries the log length); until the
  // server has one (404), a note stands in for it.
  var plotMissing = false;
  function plot(seq) {
    return h('section', { class: 'card', 'aria-labelledby': 'plot-h' },
      h('h2', { id: 'plot-h' }, 'Progress and belief'),
      h('img', {
        class: 'plot', alt: "Progress of the study and the model's current belief",
        src: base + '/plot.svg?token=' + encodeURIComponent(token) + '&v=' + seq,
        hidden: plotMissing,
      }),
      h('p', { id: 'plot-missing', class: 'muted', hidden: !plotMissing }, 'No plot is available yet.'));
  }

  function tally(q) {
    var counts = q.options.map(function () { return 0; });
    var tie = 0;
    Object.keys(q.ballots).forEach(function (n) {
      var b = q.ballots[n];
      if (b.type !== 'vote') return;
      if (b.choice === null || b.choice === undefined) tie++;
      else if (b.choice < counts.length) counts[b.choice]++;
    });
    return h('p', { class: 'tally', 'data-testid': 'tally' },
      q.options.map(function (o, i) { return [h('strong', null, o.label + ': ' + counts[i]), ' · ']; }),
      h('strong', null, "can't tell: " + tie));
  }

  function ballotText(b, q) {
    if (!b) return '';
    if (b.type === 'vote') return choiceLabel(b.choice, q.options);
    if (b.type === 'rating') return fmt(b.value);
    return '';
  }

  function voterList(q, reveal) {
    return h('ul', { class: 'voters', 'aria-label': 'Who has voted' }, q.asked.map(function (n) {
      var voted = q.voted.indexOf(n) >= 0;
      var b = q.ballots[n];
      var show = reveal && b;
      return h('li', { class: voted ? 'done' : 'waiting', 'data-voter': n, 'data-voted': voted ? 'yes' : 'no' },
        h('span', { class: 'who' }, n),
        h('span', { class: 'state' }, voted ? (show ? ballotText(b, q) : q.kind === 'group_rate' ? 'rated' : 'voted') : 'waiting'));
    }));
  }

  function facilitatorQuestion(s) {
    var q = s.pending;
    if (!q) {
      return h('section', { class: 'card question' },
        h('h2', null, 'No open question'),
        h('p', null, 'The study is not asking anything right now.'));
    }
    var group = q.kind === 'group_vote' || q.kind === 'group_rate';
    var isPrivate = q.channel === 'private';
    var reveal = !isPrivate || showSecret;
    var body = [];
    if (group) {
      body.push(h('div', { class: 'options' }, q.options.map(function (o) { return optionCard(o, null); })));
      body.push(h('h3', null, 'Who has ', q.kind === 'group_rate' ? 'rated' : 'voted',
        ' ', h('span', { class: 'count', 'data-testid': 'voted-count' }, '(' + votedLine(q) + ')')));
      body.push(voterList(q, reveal));
      if (q.kind === 'group_vote' && reveal) body.push(tally(q));
      if (isPrivate) {
        body.push(h('p', { class: 'muted' }, 'Secret ballot: the participants see only who has voted.'));
        body.push(h('button', {
          class: 'secondary', 'aria-pressed': showSecret ? 'true' : 'false', 'data-action': 'secret',
        }, showSecret ? 'Hide the secret ballots' : 'Show the secret ballots'));
      }
      if (q.kind === 'group_vote') {
        body.push(countdown(q));
        body.push(h('div', { class: 'close-row' },
          h('button', { id: 'close-round', class: 'primary', disabled: busy, 'data-action': 'close', 'data-query': q.query_id }, 'Close round'),
          h('span', { class: 'muted' }, "Missing votes count as can't tell.")));
      } else {
        body.push(h('p', { class: 'muted' }, 'A rating round closes when everyone has rated.'));
      }
    } else {
      body.push(h('h3', null, 'Enter the answer'));
      body.push(answerControls(q));
    }
    return h('section', { class: 'card question', 'aria-labelledby': 'q-h', 'data-query': q.query_id, 'data-channel': q.channel || '' },
      h('div', { class: 'q-head' },
        h('h2', { id: 'q-h' }, 'Question ' + (q.query_id + 1)), channelBadge(q.channel),
        h('span', { class: 'muted small' }, '(query id ' + q.query_id + ')')),
      h('p', { class: 'prompt' }, q.prompt),
      q.rater ? h('p', { class: 'muted' }, 'Asked of: ' + q.rater) : null,
      body);
  }

  // What the model believes at the open options and the recommendation (and, for a
  // group, each person's estimated utility), read again when the log grows.
  var beliefData = null;
  var beliefSeq = -1;
  function loadBelief(seq) {
    if (seq === beliefSeq) return;
    beliefSeq = seq;
    api('/belief').then(function (b) {
      if (seq !== beliefSeq) return;
      beliefData = b;
      render();
    }, function () { /* the panel keeps its last content */ });
  }

  function pm(m, sd) { return fmt(m) + ' ± ' + fmt(sd); }

  function beliefPanel() {
    var b = beliefData;
    if (!b) return null;
    var body;
    if (!b.options.length) {
      body = h('p', { class: 'muted' }, b.note || 'No model yet: it appears after the first answers.');
    } else {
      var people = Object.keys(b.options[0].people || {});
      body = [
        h('table', { class: 'belief', id: 'belief-table' },
          h('thead', null, h('tr', null,
            h('th', { scope: 'col' }, 'Option'),
            h('th', { scope: 'col' }, (b.what || 'value') + ' (mean ± sd)'),
            people.map(function (p) { return h('th', { scope: 'col' }, p); }))),
          h('tbody', null, b.options.map(function (o) {
            return h('tr', { 'data-option': o.label },
              h('th', { scope: 'row' }, o.label === 'recommended' ? 'Recommended' : o.label),
              h('td', null, pm(o.mean, o.sd)),
              people.map(function (p) { return h('td', null, pm(o.people[p][0], o.people[p][1])); }));
          }))),
        people.length ? h('p', { class: 'muted small' }, 'Each person’s column is the model’s estimate of their own ' +
          'utility (free of social influence); the ' + b.what + ' combines them.') : null,
      ];
    }
    return h('section', { class: 'card', id: 'belief', 'aria-labelledby': 'belief-h' },
      h('h2', { id: 'belief-h' }, 'What the model believes'), body);
  }

  function recommendation(s) {
    var r = s.recommendation;
    var inner;
    if (!r) {
      inner = h('p', { class: 'muted' }, 'None yet: the method recommends once it has learned from the first rounds.');
    } else {
      inner = [
        paramTable(r.option.params),
        h('dl', { class: 'facts' },
          h('dt', null, 'Estimated value'), h('dd', null, fmt(r.value)),
          r.belief ? [h('dt', null, 'Model belief (mean ± sd)'), h('dd', null, fmt(r.belief[0]) + ' ± ' + fmt(r.belief[1]))] : null),
      ];
    }
    return h('section', { class: 'card recommendation', id: 'recommendation', 'aria-labelledby': 'rec-h', 'data-ready': r ? 'yes' : 'no' },
      h('h2', { id: 'rec-h' }, 'Recommendation'), inner);
  }

  // A form to put an option of the facilitator's own (someone in the room asks "what about
  // 21 degrees?") into the next question: the open question's first option, to edit.
  function suggestId(name) { return 'suggest-' + name; }
  function suggestion(s) {
    var q = s.pending;
    if (!s.takes_options || !q || !q.options.length) return null;
    var params = q.options[0].params;
    return h('section', { class: 'card', id: 'suggest', 'aria-labelledby': 'suggest-h' },
      h('h2', { id: 'suggest-h' }, 'Suggest an option'),
      h('p', { class: 'muted small' }, 'It goes into the next question, beside the method’s own choice.'),
      h('form', { 'data-action': 'enqueue', 'data-query': q.query_id },
        params.map(function (p) {
          var id = suggestId(p[0]);
          return h('div', { class: 'field' }, h('label', { for: id }, p[0]),
            h('input', { id: id, name: p[0], type: 'text', required: true, autocomplete: 'off',
              value: drafts[id] !== undefined ? drafts[id] : fmt(p[1]) }));
        }),
        h('button', { type: 'submit', class: 'secondary', disabled: busy }, 'Ask it next')));
  }
  function enqueue(q) {
    var option = {};
    q.options[0].params.forEach(function (p) {
      var el = document.getElementById(suggestId(p[0]));
      var v = el ? el.value.trim() : '';
      var x = Number(v);
      option[p[0]] = v !== '' && isFinite(x) ? x : v;
    });
    act(function () {
      return api('/enqueue', { option: option });
    }, function () {
      q.options[0].params.forEach(function (p) { delete drafts[suggestId(p[0])]; });
      return 'Your option will be in the next question.';
    });
  }

  function progress(s) {
    return h('section', { class: 'card', 'aria-labelledby': 'prog-h' },
      h('h2', { id: 'prog-h' }, 'Progress'),
      h('dl', { class: 'facts', id: 'progress' },
        h('dt', null, 'Questions answered'), h('dd', { 'data-testid': 'answered' }, String(s.answered)),
        h('dt', null, 'Public rounds'), h('dd', { 'data-testid': 'public-rounds' }, String(s.public_rounds)),
        h('dt', null, 'Private rounds'), h('dd', { 'data-testid': 'private-rounds' }, String(s.private_rounds)),
        h('dt', null, 'Events in the log'), h('dd', null, String(s.events))),
      s.raters && s.raters.length ? [
        h('h3', null, 'Raters’ weight in the model'),
        h('ul', { class: 'voters', id: 'rater-weights' }, s.raters.map(function (r) {
          return h('li', { class: r.weight < 0.25 ? 'waiting' : 'done', 'data-rater': r.rater, 'data-weight': r.weight },
            h('span', { class: 'who' }, r.rater), h('span', { class: 'state' }, Math.round(100 * r.weight) + '%'));
        })),
        h('p', { class: 'muted small' }, 'Learned from how consistently each person votes with the rest: ' +
          'someone who votes at random ends with little weight.')] : null,
      h('p', null, h('a', {
        class: 'download',
        href: base + '/events?format=csv&token=' + encodeURIComponent(token),
        download: s.study + '-log.csv',
      }, 'Download the log (CSV)')));
  }

  function facilitatorView(d) {
    var s = d.status;
    return h('div', { class: 'view facilitator', 'data-role': 'facilitator' },
      h('section', { class: 'intro' },
        h('p', { class: 'eyebrow' }, 'Facilitator · study ', h('code', null, s.study)),
        h('h1', null, s.description || s.study),
        h('p', { class: 'muted' }, 'Method: ' + s.method + ' · participants: ' + s.participants.join(', '))),
      errorBox(), noticeBox(),
      h('div', { class: 'columns' },
        h('div', { class: 'col-main' }, facilitatorQuestion(s), plot(d.seq)),
        h('div', { class: 'col-side' }, recommendation(s), beliefPanel(), suggestion(s), progress(s))));
  }

  // ---- a participant's view --------------------------------------------------------------

  function participantQuestion(s, me) {
    var q = s.pending;
    if (!q) {
      return h('section', { class: 'card question' },
        h('h2', null, 'No question right now'),
        h('p', null, 'This page updates by itself when the facilitator asks the next one.'));
    }
    var head = h('div', { class: 'q-head' },
      h('h2', { id: 'q-h' }, q.kind === 'group_rate' ? 'How good is this option?'
        : q.kind === 'evaluate' ? 'Report the values'
          : q.kind === 'compare' ? q.prompt : 'Which do you prefer?'),
      channelBadge(q.channel));
    var parts = [countdown(q)];
    if (q.channel === 'private') {
      parts.push(h('p', { class: 'note private', 'data-testid': 'secret-note' },
        h('strong', null, 'Secret ballot'), ' — only the facilitator sees your vote.'));
    } else if (q.channel === 'public') {
      parts.push(h('p', { class: 'note public' },
        h('strong', null, 'Public vote'), ' — a show of hands: the group sees how you vote.'));
    }
    // A group vote's prompt says what the note and heading say; other kinds need theirs.
    if (q.kind !== 'group_vote' && q.kind !== 'compare') parts.push(h('p', { class: 'prompt' }, q.prompt));
    var group = q.kind === 'group_vote' || q.kind === 'group_rate';
    if (group && q.asked.indexOf(me) < 0) {
      parts.push(h('div', { class: 'options' }, q.options.map(function (o) { return optionCard(o, null); })));
      parts.push(h('p', { class: 'muted' }, 'You are not asked in this round (' + votedLine(q) + ').'));
    } else if (q.kind === 'group_vote') {
      var mine = q.ballots[me];
      var chosen = mine && mine.type === 'vote' ? mine.choice : undefined;
      parts.push(pairButtons(q, 'vote', chosen));
      parts.push(h('p', { class: 'vote-status', role: 'status', 'data-testid': 'vote-status' },
        mine
          ? ['Vote recorded (', h('strong', null, choiceLabel(chosen, q.options)), ') — waiting for the others (' + votedLine(q) + ').']
          : 'Tap the option you prefer (' + votedLine(q) + ' so far).'));
      if (mine) parts.push(h('p', { class: 'muted' }, 'You can change your vote until the round closes.'));
    } else if (q.kind === 'group_rate') {
      var my = q.ballots[me];
      var id = 'rate-' + q.query_id;
      parts.push(h('form', { 'data-action': 'rate', 'data-query': q.query_id },
      h('div', { class: 'options' }, optionCard(q.options[0],
        numberInput(id, 'Your rating (larger is better)', my ? fmt(my.value) : ''))),
      h('button', { type: 'submit', class: 'vote primary', disabled: busy }, my ? 'Change rating' : 'Submit rating')));
      parts.push(h('p', { class: 'vote-status', role: 'status', 'data-testid': 'vote-status' },
        my ? 'Rating recorded (' + fmt(my.value) + ') — waiting for the others (' + votedLine(q) + ').'
          : votedLine(q) + ' so far.'));
    } else {
      if (q.rater && q.rater !== me) parts.push(h('p', { class: 'muted' }, 'Asked of: ' + q.rater));
      parts.push(answerControls(q));
    }
    return h('section', { class: 'card question', 'aria-labelledby': 'q-h', 'data-query': q.query_id, 'data-channel': q.channel || '' },
      head, parts);
  }

  function participantView(d) {
    var s = d.status;
    var me = d.you.participant || '';
    return h('div', { class: 'view participant', 'data-role': 'participant' },
      h('section', { class: 'intro' },
        h('p', { class: 'eyebrow' }, 'You are ', h('strong', null, me)),
        s.description ? h('p', { class: 'lead' }, s.description) : null),
      errorBox(), noticeBox(),
      participantQuestion(s, me),
      h('p', { class: 'muted small' }, 'Study ', h('code', null, s.study), ' · ', String(s.answered),
        s.answered === 1 ? ' question' : ' questions', ' answered so far. This page updates by itself.'));
  }

  // ---- rendering -------------------------------------------------------------------------

  // Patch `from` into `to` in place: elements of the same tag and id are kept (so focus,
  // a half-finished tap and typed text survive), the rest is replaced.
  function same(a, b) {
    if (a.nodeType !== b.nodeType) return false;
    if (a.nodeType !== 1) return true;
    return a.tagName === b.tagName && a.id === b.id;
  }
  function morph(from, to) {
    var i;
    var fa = from.attributes;
    for (i = fa.length - 1; i >= 0; i--) {
      if (!to.hasAttribute(fa[i].name)) from.removeAttribute(fa[i].name);
    }
    var ta = to.attributes;
    for (i = 0; i < ta.length; i++) {
      if (from.getAttribute(ta[i].name) !== ta[i].value) from.setAttribute(ta[i].name, ta[i].value);
    }
    if (from.tagName === 'INPUT' && from !== document.activeElement && from.value !== to.value) {
      from.value = to.value;
    }
    var fc = Array.prototype.slice.call(from.childNodes);
    var tc = Array.prototype.slice.call(to.childNodes);
    for (i = 0; i < tc.length; i++) {
      var f = fc[i];
      var t = tc[i];
      if (!f) from.appendChild(t);
      else if (!same(f, t)) from.replaceChild(t, f);
      else if (f.nodeType === 1) morph(f, t);
      else if (f.nodeValue !== t.nodeValue) f.nodeValue = t.nodeValue;
    }
    for (i = tc.length; i < fc.length; i++) from.removeChild(fc[i]);
  }

  function render() {
    if (!data) return;
    var view = data.you.role === 'facilitator' ? facilitatorView(data) : participantView(data);
    var current = app.firstElementChild;
    if (app.childNodes.length === 1 && current && same(current, view) &&
        current.getAttribute('data-role') === view.getAttribute('data-role')) {
      morph(current, view);
    } else {
      app.replaceChildren(view);
    }
    document.title = (data.you.role === 'facilitator' ? 'Facilitator' : data.you.participant) +
      ' · ' + data.status.study + ' · agora';
  }

  // ---- what people do: one listener per kind of event, on the page -----------------------

  // The open query, if `el` belongs to it (a tap on a question that has just closed is
  // ignored: the page is about to show the next one).
  function openQuery(el) {
    var q = data && data.status.pending;
    if (!q || String(q.query_id) !== el.getAttribute('data-query')) return null;
    return q;
  }

  function wire() {
    app.addEventListener('click', function (e) {
      var el = e.target.closest ? e.target.closest('button[data-action]') : null;
      if (!el || !app.contains(el) || el.disabled) return;
      var action = el.getAttribute('data-action');
      if (action === 'reload') { location.reload(); return; }
      if (action === 'secret') { showSecret = !showSecret; render(); return; }
      var q = openQuery(el);
      if (!q) return;
      var c = el.getAttribute('data-choice');
      var choice = c === 'tie' ? null : Number(c);
      if (action === 'vote') {
        castBallot(q, { type: 'vote', choice: choice });
      } else if (action === 'compare') {
        answer(q, choice === null ? { type: 'tie', rater: null } : { type: 'choice', winner: choice, rater: null },
          'Answer');
      } else if (action === 'close') {
        closeRound(q);
      }
    });
    app.addEventListener('submit', function (e) {
      var form = e.target;
      e.preventDefault();
      var q = openQuery(form);
      if (!q) return;
      var action = form.getAttribute('data-action');
      if (action === 'rate') {
        var x = readNumber('rate-' + q.query_id, 'your rating');
        if (x !== null) castBallot(q, { type: 'rating', value: x });
      } else if (action === 'values') {
        var values = [];
        for (var i = 0; i < q.options.length; i++) {
          var v = readNumber(valueId(q, i), 'option ' + q.options[i].label);
          if (v === null) return;
          values.push(v);
        }
        answer(q, { type: 'values', values: values }, 'Values');
      } else if (action === 'enqueue') {
        enqueue(q);
      }
    });
    app.addEventListener('input', function (e) {
      if (e.target.id) drafts[e.target.id] = e.target.value;
    });
    // The plot: shown once it loads, a note while the server has none (load and error do
    // not bubble, so they are caught on the way down).
    function onPlot(e) {
      var t = e.target;
      if (!t || t.tagName !== 'IMG' || !t.classList.contains('plot')) return;
      var missing = e.type === 'error';
      if (missing !== plotMissing) { plotMissing = missing; render(); }
    }
    app.addEventListener('load', onPlot, true);
    app.addEventListener('error', onPlot, true);
  }

  function fatal(e) {
    var hint = null;
    if (e.status === 401) {
      hint = 'The link’s token is not valid for this study. Ask the facilitator for your link ' +
        '(`agora serve --demo`, `agora study create` and `agora study tokens` print them).';
    } else if (e.status === 404) {
      hint = 'No study of that name on this server. Check the link.';
    }
    app.replaceChildren(h('section', { class: 'card' },
      h('h1', null, 'Cannot open this study'),
      h('p', { class: 'error', role: 'alert' }, e.message),
      hint ? h('p', null, hint) : null,
      h('button', { class: 'primary', 'data-action': 'reload' }, 'Try again')));
    setLive('', '');
  }

  // ---- the studies index (the server's admin token, no study) ---------------------------

  function ago(ms) {
    var s = Math.max(0, Math.round((Date.now() - ms) / 1000));
    if (s < 60) return s + ' s ago';
    if (s < 3600) return Math.round(s / 60) + ' min ago';
    if (s < 86400) return Math.round(s / 3600) + ' h ago';
    return new Date(ms).toISOString().slice(0, 10);
  }

  function indexRow(st) {
    var people = Object.keys(st.links.participants);
    return h('tr', { 'data-study': st.name },
      h('th', { scope: 'row' },
        h('a', { href: st.links.facilitator, class: 'study-link' }, st.name),
        st.description ? h('div', { class: 'muted small' }, st.description) : null),
      h('td', null, st.method),
      h('td', { 'data-testid': 'state' }, st.state),
      h('td', null, String(st.answered)),
      h('td', null, h('time', { datetime: new Date(st.last_activity_ms).toISOString() }, ago(st.last_activity_ms))),
      h('td', null, people.length === 0 ? h('span', { class: 'muted' }, '—') :
        h('ul', { class: 'links' }, people.map(function (p) {
          return h('li', null, h('a', { href: st.links.participants[p], 'data-participant': p }, p));
        }))));
  }

  function indexView(list) {
    var body = list.studies.length === 0
      ? h('p', { class: 'muted' }, 'No studies yet: create one with ', h('code', null, 'agora study create'),
        ' or POST /api/studies.')
      : h('table', { class: 'index', id: 'studies' },
        h('thead', null, h('tr', null,
          ['Study (facilitator link)', 'Method', 'State', 'Answered', 'Last activity', 'Participant links']
            .map(function (t) { return h('th', { scope: 'col' }, t); }))),
        h('tbody', null, list.studies.map(indexRow)));
    return h('div', { class: 'view index', 'data-role': 'admin' },
      h('section', { class: 'intro' },
        h('p', { class: 'eyebrow' }, 'Server admin'),
        h('h1', null, 'Studies'),
        h('p', { class: 'muted' }, 'Every study on this server and where it stands; the list refreshes itself. ' +
          'The study’s name opens the facilitator’s view; each participant’s name is their voting link.')),
      h('section', { class: 'card' }, body));
  }

  function showIndex() {
    var init = { headers: { Authorization: 'Bearer ' + token }, cache: 'no-store' };
    return fetch('/api/studies', init).then(function (res) {
      return res.json().then(function (json) {
        if (!res.ok) {
          var e = new Error(json && json.error ? json.error.message : 'The server answered ' + res.status + '.');
          e.status = res.status;
          throw e;
        }
        return json;
      });
    }).then(function (list) {
      var next = indexView(list);
      if (app.firstElementChild && app.firstElementChild.classList.contains('index')) morph(app.firstElementChild, next);
      else app.replaceChildren(next);
      setLive('', '');
    }, function (e) {
      if (e.status === 401) {
        app.replaceChildren(h('section', { class: 'card' },
          h('h1', null, 'Cannot list the studies'),
          h('p', { class: 'error', role: 'alert' }, e.message),
          h('p', null, 'A study’s link has the form ', h('code', null, location.origin + '/?study=NAME&token=TOKEN'),
            '; the list of studies needs the server’s admin token: ', h('code', null, '/?token=ADMIN_TOKEN'), '.')));
      } else {
        setLive('Offline: retrying…', 'off');
      }
    });
  }

  setInterval(tickCountdowns, 500);

  function start() {
    if (token && !study) {
      showIndex();
      setInterval(showIndex, 5000);
      return;
    }
    if (!study || !token) {
      app.replaceChildren(h('section', { class: 'card' },
        h('h1', null, 'Welcome to agora'),
        h('p', null, 'Open this page with the link you were given: it looks like ',
          h('code', null, location.origin + '/?study=NAME&token=TOKEN'), '.'),
        h('p', null, 'The facilitator gets the links from ', h('code', null, 'agora serve --demo'),
          ' or ', h('code', null, 'agora study create'), '.')));
      return;
    }
    refresh().then(function () { if (data) connect(); });
  }

  wire();

  window.addEventListener('error', function (e) {
    error = 'Something went wrong on this page: ' + (e.message || e) + '. Reload to continue.';
    if (data) render(); else app.replaceChildren(h('p', { class: 'error', role: 'alert' }, error));
  });
  start();
})();
