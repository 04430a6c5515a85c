// activebayes labelling page: plain JavaScript, no build step, nothing loaded from elsewhere.
// Every action is a POST of JSON carrying the page's CSRF token; an answer is shown as saved
// only once the server has answered that it committed it.
"use strict";
(() => {
  const body = document.body;
  const { base, token, csrf, page } = body.dataset;
  const leaseSeconds = Number(body.dataset.lease || 120);
  const $ = (selector) => document.querySelector(selector);
  let busy = false;
  let roundRunning = false;  // a round started from this page runs
  const STAGES_WAITING = "waiting for answers";  // web/rounds.py STAGES["queried"]

  async function post(action, payload) {
    const response = await fetch(`${base}/${action}?token=${encodeURIComponent(token)}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      credentials: "omit",
      body: JSON.stringify({ csrf, ...payload }),
    });
    const text = await response.text();
    let data = null;
    try { data = JSON.parse(text); } catch (_) { data = { message: text }; }
    if (!response.ok) {
      const error = new Error(data.message || `the server answered ${response.status}`);
      error.bad = data.status === "bad";  // refused as it was written (a number that is none): correct it and send it again
      error.retry = data.status === "unavailable";  // the database was away: nothing written, the same again later
      error.forbidden = response.status === 403;  // a restarted server made new tokens: reloading this URL cannot help
      throw error;
    }
    return data;
  }

  function ack(text, ok) {
    const line = $("#ack");
    if (!line) return;
    line.textContent = text;
    line.className = ok ? "ok" : "bad";
  }

  // Each answer saved here is listed with a "change" button: it takes that answer back (as undo
  // does the last one) and shows the item again, to be answered anew.
  function logAnswer(key, value) {
    unlog(key);  // an answer given again after a change replaces its line
    const item = document.createElement("li");
    const text = document.createElement("bdi");
    text.textContent = `${key} → ${value}`;
    const change = document.createElement("button");
    change.type = "button";
    change.className = "change";
    change.dataset.key = key;
    change.textContent = "change";
    change.setAttribute("aria-label", `change the answer for ${key}`);
    item.append(text, " ", change);
    item.dataset.key = key;
    item.dataset.value = value;
    $("#log").prepend(item);
  }

  function unlog(key) {
    const item = [...document.querySelectorAll("#log li")].find((li) => li.dataset.key === key);
    if (item) item.remove();
  }

  function currentCard() { return $("#card .card[data-key]"); }

  let finding = false;  // the last answer came from the find field: the next card's field gets the focus

  // An image file smaller than this is enlarged by a whole factor, pixels kept square, as the
  // server enlarges an array's image (web/items.py IMAGE_MIN_SIDE); a 16 x 16 PNG was a speck.
  const IMAGE_MIN_SIDE = 160;

  // The class buttons of an image item wait for its image: an answer given before the image is
  // drawn (a slow network, a key pressed fast) would be a guess about an item never seen.
  function enableButtons() {
    const waiting = $("#card .card[data-loading]");
    document.querySelectorAll("#card button").forEach((b) => { b.disabled = Boolean(waiting) && b.classList.contains("answer"); });
  }

  function whenImageDrawn() {
    const img = $("#card img.item");
    if (!img) return;
    const card = currentCard();
    const drawn = () => {
      const side = Math.max(img.naturalWidth, img.naturalHeight);
      if (side > 0 && side < IMAGE_MIN_SIDE) {
        img.style.width = `${img.naturalWidth * Math.ceil(IMAGE_MIN_SIDE / side)}px`;
        img.classList.add("enlarged");
      }
      delete card.dataset.loading;
      if (!busy) enableButtons();
    };
    if (img.complete && img.naturalWidth > 0) { drawn(); return; }
    card.dataset.loading = "1";
    enableButtons();
    img.addEventListener("load", drawn, { once: true });
    img.addEventListener("error", () => {  // a box that says so where the image would be (not a broken-image sliver)
      const missing = document.createElement("p");
      missing.className = "item missing";
      missing.textContent = `the image of ${card.dataset.key} is not available`;
      img.replaceWith(missing);
      if (currentCard() === card) ack(`the image of ${card.dataset.key} did not load: skip it (s), or reload the page`, false);
    }, { once: true });
  }

  function show(data) {
    $("#card").innerHTML = data.card;
    whenImageDrawn();
    // the focus goes to what answers next: the number field, the find field when it was used,
    // else the item itself (a screen reader reads its name; the keys work from anywhere)
    const input = $("#number") || (finding ? $("#find") : null) || $("#card .card");
    if (input) input.focus({ preventScroll: !input.matches("input") });
    if ($("#card [data-wait]")) setTimeout(() => act("next", {}), 3000);
    else if ($("#card .card.empty")) watchRounds();
  }

  // GET `${base}/${path}` as text; an Error with the server's one line when it refuses (a
  // restarted server's 403 is text, not JSON; a database away is JSON), `refused` on a 403.
  async function getText(path) {
    const response = await fetch(`${base}/${path}?token=${encodeURIComponent(token)}`, { credentials: "omit" });
    const text = await response.text();
    if (!response.ok) {
      let message = text.split("\n")[0];
      try { message = JSON.parse(text).message || message; } catch (_) { /* a line of text */ }
      const error = new Error(message || `the server answered ${response.status}`);
      error.refused = response.status === 403;  // a restarted server's new tokens: asking again cannot help
      throw error;
    }
    return text;
  }

  // The round's progress (GET /progress): {running, error, round, stage}.
  async function progressState() { return JSON.parse(await getText("progress")); }

  // A page with nothing to answer follows the rounds by itself: it shows the stage of a round
  // running (started on another labeller's page or in a terminal), and the next round's first
  // item as soon as that round waits for answers; no reload needed.
  const WATCH_MS = 3000;
  const AWAY = "no answer from the server: ";
  let watching = null;
  function watchRounds() {
    if (watching !== null) return;
    watching = setTimeout(async () => {
      watching = null;
      const card = $("#card .card.empty");
      if (!card || busy) { if (card) watchRounds(); return; }
      let state;
      try {
        state = await progressState();
      } catch (err) {
        if (err.refused) { ack(err.message, false); return; }  // a restarted server's new tokens: asking again cannot help
        ack(`${AWAY}${err.message}`, false);
        watchRounds();  // a server stopped for a moment: the page asks again
        return;
      }
      if ($("#ack") && $("#ack").textContent.startsWith(AWAY)) ack("", true);  // back
      if ($("#card .card.empty") !== card) return;  // an action showed another card meanwhile
      const shown = card.dataset.round ? Number(card.dataset.round) : null;
      if (state.stage === STAGES_WAITING && state.round !== shown) { act("next", {}); return; }
      const progress = $("#progress");
      if (progress && state.round && (state.running || (state.round !== shown && state.stage !== "done"))) {
        progress.textContent = `round ${state.round}: ${state.stage}`;
      }
      watchRounds();
    }, WATCH_MS);
  }

  async function act(action, payload, what) {
    if (busy) return;
    busy = true;
    document.querySelectorAll("#card button").forEach((b) => { b.disabled = true; });
    try {
      const data = await post(action, payload);
      if (data.status === "saved" || data.status === "repeat") {
        ack(data.status === "saved" ? `saved ${data.key} → ${data.value}` : data.message, true);
        logAnswer(data.key, data.value);
      } else if (data.status === "undone") {
        ack(data.message, true);
        unlog(data.key);
      } else if (data.status === "refused") {
        ack(data.message, false);
      } else if (data.message) {
        ack(data.message, true);
      }
      if ("card" in data) show(data);
      else if (data.next) ack(`${$("#ack") ? $("#ack").textContent : ""}; ${data.next}`, false);
    } catch (err) {
      const then = err.bad || err.retry || err.forbidden ? "" : ". Reload the page once the server is back.";
      ack(`${what || action} not saved: ${err.message}${then}`, false);
      enableButtons();
    } finally {
      busy = false;
    }
  }

  function answer(value) {
    const card = currentCard();
    if (!card) return;
    act("answer", { round: Number(card.dataset.round), key: card.dataset.key, value }, `the answer for ${card.dataset.key}`);
  }

  function skip() {
    const card = currentCard();
    if (card) act("skip", { round: Number(card.dataset.round), key: card.dataset.key });
  }

  async function nextRound() {
    const progress = $("#progress");
    try {
      const started = await post("round", {});
      if (progress) progress.textContent = started.message;
    } catch (err) {
      roundRunning = false;
      ack(`the round did not start: ${err.message}`, false);
      return;
    }
    const poll = async () => {
      let state;
      try {
        state = await progressState();
      } catch (err) {
        roundRunning = false;
        ack(err.refused ? err.message : `no answer from the server: ${err.message}`, false);
        return;
      }
      if (progress) progress.textContent = state.round ? `round ${state.round}: ${state.stage}` : "starting";
      if (state.running) { setTimeout(poll, 1000); return; }
      if (state.error) { ack(state.error, false); }
      roundRunning = false;
      if (page === "label") { if (!state.error) act("next", {}); } else refreshStatus().catch((err) => ack(`${AWAY}${err.message}`, false));
    };
    setTimeout(poll, 500);
  }

  // The status page follows the project: every WATCH_MS it asks /summary (a few counts) and,
  // when the version differs from the one it shows, fetches itself and replaces each part
  // (data-live) that changed. A part is left as it is, and asked again next time, while the
  // user is in it: typing in a field there, or with text selected there (to copy a key); one
  // holding the focus on a button gets the focus back on the new one. The button's part waits
  // while a round started here runs (its stage is on the page meanwhile).
  function busyIn(part) {
    const active = document.activeElement;
    if (active && part.contains(active) && active.matches("input, textarea, select, [contenteditable]")) return true;
    if (part.dataset.live === "action" && roundRunning) return true;
    const selection = window.getSelection();
    return Boolean(selection && !selection.isCollapsed && selection.rangeCount && selection.getRangeAt(0).intersectsNode(part));
  }

  async function refreshStatus() {
    const shown = $("#status");
    if (!shown) return;
    const fresh = new DOMParser().parseFromString(await getText("status"), "text/html").querySelector("#status");
    if (!fresh) return;
    let stale = false;
    document.querySelectorAll("#status [data-live]").forEach((part) => {
      const next = fresh.querySelector(`[data-live="${part.dataset.live}"]`);
      if (!next || next.innerHTML === part.innerHTML) { delete part.dataset.stale; return; }
      if (busyIn(part)) { part.dataset.stale = "1"; stale = true; return; }  // the user is there: next time
      const focused = part.contains(document.activeElement) && document.activeElement.id ? document.activeElement.id : null;
      part.innerHTML = next.innerHTML;
      delete part.dataset.stale;
      if (focused && document.getElementById(focused)) document.getElementById(focused).focus();
    });
    if (!stale) shown.dataset.version = fresh.dataset.version;
  }

  function followStatus() {
    setTimeout(async () => {
      try {
        const { version } = JSON.parse(await getText("summary"));
        if ($("#ack") && $("#ack").textContent.startsWith(AWAY)) ack("", true);  // back
        if (version !== $("#status").dataset.version) await refreshStatus();
      } catch (err) {
        if (err.refused) { ack(err.message, false); return; }  // a restarted server's new tokens: asking again cannot help
        ack(`${AWAY}${err.message}`, false);
      }
      followStatus();
    }, WATCH_MS);
  }

  document.addEventListener("click", (event) => {
    const button = event.target.closest("button");
    if (!button || button.disabled) return;
    if (button.id === "sign") { flipSign(); return; }  // the ± beside the number field: each click changes the sign
    // the second click of a double click lands on the next item's button once the first one's
    // answer has come back: it must not answer (or skip, or undo) that item unseen
    if (event.detail > 1 && button.closest("#card")) return;
    if (button.classList.contains("answer")) { finding = document.activeElement === $("#find"); answer(button.dataset.value); }
    else if (button.id === "skip") skip();
    else if (button.id === "undo") act("undo", {});
    else if (button.classList.contains("change")) act("undo", { key: button.dataset.key });
    else if (button.id === "unskip") act("next", { unskip: true });
    else if (button.id === "next-round") {
      // answers still to come (web/templates/_next_round.html): the round goes without them only when the user says so
      if (button.dataset.confirm && !window.confirm(button.dataset.confirm)) return;
      button.disabled = true;
      roundRunning = true;
      nextRound();
    }
  });

  // The ± beside the number field (its decimal keypad on a phone has no minus sign): the number
  // in the field changes its sign, and the field keeps the focus (and its keypad) to go on typing.
  function flipSign() {
    const input = $("#number");
    const text = input.value.trim();
    input.value = text.startsWith("-") ? text.slice(1) : `-${text.replace(/^\+/, "")}`;
    input.focus();
    input.setSelectionRange(input.value.length, input.value.length);
  }

  document.addEventListener("mousedown", (event) => {
    if (event.target.closest("#sign")) event.preventDefault();  // the field is not left, so a phone's keypad stays open
  });

  document.addEventListener("submit", (event) => {
    if (event.target.id !== "number-form") return;
    event.preventDefault();
    const input = $("#number");
    if (input.value.trim() !== "" && input.checkValidity()) answer(input.value.trim());
  });

  // With more than ten classes a field finds one by typing: the buttons that do not hold the
  // text are hidden, and Enter answers with the class named exactly so, else the only one that
  // starts with the text, else the only one left.
  // Letters match with or without their accents ("zur" finds "Zürich"), in any case.
  const folded = (text) => text.normalize("NFD").replace(/\p{M}/gu, "").toLowerCase();

  function matching(text) {
    const wanted = folded(text.trim());
    const buttons = [...document.querySelectorAll("#card button.answer")];
    const name = (b) => folded(b.dataset.value);
    const shown = buttons.filter((b) => name(b).includes(wanted));
    const starting = shown.filter((b) => name(b).startsWith(wanted));
    const only = (list) => (list.length === 1 ? list[0] : null);
    return { buttons, shown, pick: buttons.find((b) => name(b) === wanted) || only(starting) || only(shown) };
  }

  document.addEventListener("input", (event) => {
    if (event.target.id !== "find") return;
    const { buttons, shown } = matching(event.target.value);
    buttons.forEach((b) => { b.hidden = !shown.includes(b); });
  });

  document.addEventListener("keydown", (event) => {
    if (event.target.id !== "find") return;
    if (event.key === "Enter") {
      event.preventDefault();
      const { shown, pick } = matching(event.target.value);
      if (pick) pick.click();
      else ack(shown.length ? `${shown.length} classes hold "${event.target.value.trim()}": type more, or click one` : `no class holds "${event.target.value.trim()}"`, false);
    } else if (event.key === "Escape") {
      event.target.value = "";
      event.target.dispatchEvent(new Event("input", { bubbles: true }));
      focusCard();  // the keys answer again
    }
  });

  function focusCard() {
    const card = $("#card .card");
    if (card) card.focus({ preventScroll: true });
  }

  document.addEventListener("keydown", (event) => {
    if (page !== "label" || event.ctrlKey || event.metaKey || event.altKey) return;
    if (event.repeat && !(event.target instanceof HTMLInputElement)) { event.preventDefault(); return; }  // a key held down answers once
    if (event.target instanceof HTMLInputElement) {  // typing a class name, or a number with its unit ("4.5 s"): letters are text
      if (event.key === "Escape" && event.target.id === "number") focusCard();  // then s skips and u undoes
      return;
    }
    if (event.key === "/" && $("#find")) {
      event.preventDefault();
      $("#find").focus();
    } else if (/^[-+.,0-9]$/.test(event.key) && $("#number")) {
      $("#number").focus();  // a number typed after Escape goes into the field (the key is not consumed)
    } else if (/^[0-9]$/.test(shortcutOf(event))) {  // the class whose key it is (web/shortcuts.py)
      const button = $(`#card button.answer[data-shortcut="${shortcutOf(event)}"]`);
      if (button) { event.preventDefault(); button.click(); }
    } else if (shortcutOf(event) === "s") {
      event.preventDefault();
      skip();
    } else if (shortcutOf(event) === "u") {
      event.preventDefault();
      act("undo", {});
    }
  });

  // The shortcut a key press means: the letter or digit it types, or, where the keyboard's layout
  // types none there (AZERTY's digit row types & é " ' ( unshifted, a Russian or Hebrew layout
  // ы or ד), the key's place on a US keyboard, so that 1 answers and s skips on any layout.
  function shortcutOf(event) {
    if (/^[a-z0-9]$/i.test(event.key)) return event.key.toLowerCase();
    const place = /^Digit([0-9])$|^Key([A-Z])$/.exec(event.code || "");
    return place ? place[1] || place[2].toLowerCase() : event.key;
  }

  if (page === "status") followStatus();
  if (page === "label") {
    act("next", {});
    setInterval(async () => {  // keep the lease on the item shown
      const card = currentCard();
      if (!card || busy) return;
      let renewed;
      try {
        renewed = await post("renew", { round: Number(card.dataset.round), key: card.dataset.key });
      } catch (_) {
        return;  // the server is away: the next action says so
      }
      // answered elsewhere (the prompt, a file, another tab), taken by another labeller, or its
      // round closed: say so and show what is open now, before anyone answers it in vain
      if (renewed.held === false && currentCard() === card && !busy) {
        ack(`${card.dataset.key} was answered or taken elsewhere meanwhile (or its round closed); showing what is open now`, false);
        act("next", {});
      }
    }, (leaseSeconds * 1000) / 3);
  }
})();
