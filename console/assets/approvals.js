// The Approvals page (issue 51 point 1): each call waiting for a person
// says, in words, for whom it is, what the user asked, what the tool is
// and the request as it will be sent (credentials added when sent), and
// when it expires; a decision says what happened and links to the run.
// Loaded before app.js: its helpers (el, call, t…) are read when a page
// is drawn.
'use strict';

(window.BLINDEXEC_PAGES = window.BLINDEXEC_PAGES || []).push({
  strings: {
    en: {
      for_user: 'For {user}', user_n: 'user {id}', no_user: 'no user (user 0)',
      asked: 'The user asked', asked_none: 'The run\'s request holds no message of the user.',
      direct_by: 'Direct call by {who}', who_admin: 'the administrator', who_service: 'the service (RuoYi)', who_mcp: 'an MCP client of {user}',
      prepared_request: 'The request, as it will be sent', added_when_sent: 'added when sent',
      outcome_sent: 'Approved and sent: the API answered HTTP {status}.', outcome_failed: 'Approved; the call failed: {error}',
      outcome_denied: 'Denied: nothing was sent; the assistant was told.', outcome_stale: 'Not sent: the request changed since it was prepared (stale); the assistant was told.',
      outcome_expired: 'Not sent: the call expired before the decision.', outcome_approved_direct: 'Approved: the client sends the call when it makes it again.',
      outcome_denied_direct: 'Denied: nothing was sent.', outcome_closed: 'Not decided here: {message}', outcome_waiting: 'Decided; the run waits for another decision.',
      open_run: 'Open the run', filter_user_ph: 'all users', show: 'Show',
      q_asks: 'The MCP server {server} asks', q_during: 'during a call of {tool}', q_link: 'It asks you to open this link, on {host}. The engine does not open it; open it only if you trust that site.',
      q_submit: 'Answer', q_decline: 'Decline', q_cancel: 'Cancel', q_required: 'required', q_choose: '(choose)',
      q_answered_accept: 'Answered: the MCP server gets what you entered, nothing more.', q_answered_decline: 'Declined: the MCP server is told you declined.',
      q_answered_cancel: 'Cancelled: the MCP server is told you did not answer.', q_not_answerable: 'This field cannot be answered here (type {type}); the MCP server gets the other fields.',
    },
    'zh-CN': {
      for_user: '代表 {user}', user_n: '用户 {id}', no_user: '无用户（用户 0）',
      asked: '用户的请求', asked_none: '该运行的请求中没有用户消息。',
      direct_by: '直接调用，发起者：{who}', who_admin: '管理员', who_service: '服务（若依）', who_mcp: '{user} 的 MCP 客户端',
      prepared_request: '将要发送的请求', added_when_sent: '发送时添加',
      outcome_sent: '已批准并发送：API 返回 HTTP {status}。', outcome_failed: '已批准，但调用失败：{error}',
      outcome_denied: '已拒绝：未发送任何内容，已告知助手。', outcome_stale: '未发送：请求在准备之后发生了变化（已失效），已告知助手。',
      outcome_expired: '未发送：决定之前调用已过期。', outcome_approved_direct: '已批准：客户端再次发起调用时发送。',
      outcome_denied_direct: '已拒绝：未发送任何内容。', outcome_closed: '未在此决定：{message}', outcome_waiting: '已决定；该运行还在等待另一项决定。',
      open_run: '查看运行', filter_user_ph: '所有用户', show: '显示',
      q_asks: 'MCP 服务器 {server} 提问', q_during: '来自 {tool} 的一次调用', q_link: '它请你打开这个链接，位于 {host}。引擎不会打开它；仅在信任该网站时打开。',
      q_submit: '回答', q_decline: '拒绝', q_cancel: '取消', q_required: '必填', q_choose: '（请选择）',
      q_answered_accept: '已回答：MCP 服务器只收到你填写的内容。', q_answered_decline: '已拒绝：已告知 MCP 服务器你拒绝回答。',
      q_answered_cancel: '已取消：已告知 MCP 服务器你没有回答。', q_not_answerable: '此字段无法在此回答（类型 {type}）；MCP 服务器会收到其他字段。',
    },
  },
  pages: { approvals: (page, parts) => pageApprovals(page, parts[1]) },
});

// userLabel names a user for people: "user 7" and, with RuoYi's tables,
// the name RuoYi shows ("user 2 · 若依 (ry)").
function userLabel(id, name) {
  if (id === null || id === undefined || id === 0) return t('no_user');
  const who = fill('user_n', { id: String(id) });
  return name ? who + ' · ' + name : who;
}

// preparedBy words who made a direct call ("user:7", "mcp:user:7",
// "admin", "service").
function preparedBy(by, user) {
  const m = /^(user|mcp):(?:user:)?(\d+)$/.exec(by || '');
  if (m && m[1] === 'mcp') return fill('who_mcp', { user: userLabel(Number(m[2]), user.name) });
  if (m) return userLabel(Number(m[2]), user.name);
  return by === 'admin' ? t('who_admin') : by === 'service' ? t('who_service') : by || '?';
}

// pageApprovals lists the calls waiting for a person — a per-user
// session its own, the administrator's all or one user's — newest first,
// one page of each inbox at a time (More reads the next: an inbox is
// never read whole), and decides one with a POST (the session's CSRF
// token); opening the page decides nothing.
async function pageApprovals(page, uid) {
  heading(page, t('approvals'), t('approvals_purpose'));
  const user = isAdmin() ? (uid || '') : '';
  if (isAdmin()) {
    const who = el('input', { attrs: { type: 'number', min: 1, id: 'approvals-user', value: user, placeholder: t('filter_user_ph'), 'aria-label': t('user_id') } });
    page.append(el('form', { class: 'row', on: { submit: (e) => { e.preventDefault(); location.hash = '#/approvals/' + encodeURIComponent(who.value); } } },
      el('label', null, t('user_id'), who), el('button', { text: t('show') })));
  }
  const q = user ? '&user_id=' + encodeURIComponent(user) : '';
  const runs = el('div', { attrs: { id: 'approvals-runs' } });
  const mcp = el('div', { attrs: { id: 'approvals-calls' } });
  const empty = el('p', { class: 'empty', text: t('empty_approvals') });
  page.append(runs, mcp);
  const fromRuns = (data) => (data.runs || []).flatMap((r) => (r.pending || []).map((p) => ({ p, run: r })));
  const fromCalls = (data) => (data.pending || []).map((p) => ({ p, run: null }));
  // inbox fills holder with a page of path and, when another follows, a
  // More button reading it; it answers how many items it showed. A page
  // that cannot be read shows the error, unless quiet (the direct calls'
  // inbox is served only with MCP on).
  const inbox = async (path, items, holder, quiet) => {
    const r = await call('GET', path);
    if (!r.ok) {
      if (!quiet) holder.replaceChildren(errorBox(r));
      return quiet ? 0 : 1;
    }
    const shown = items(r.data);
    const tools = await toolTexts(shown.map(({ p }) => p.tool));
    holder.replaceChildren(...shown.map(({ p, run }) => (p.kind === 'authorization' ? authorizationItem(p, run.run_id)
      : p.kind === 'question' ? questionItem(p, tools[p.tool]) : approvalItem(p, run, tools[p.tool]))));
    if (r.data.next) {
      const next = path.replace(/([?&])cursor=[^&]*&?/, '$1').replace(/[?&]$/, '');
      const more = el('button', { class: 'secondary more', text: t('more'), on: { click: async () => {
        const rest = el('div');
        more.replaceWith(rest);
        await inbox(next + (next.includes('?') ? '&' : '?') + 'cursor=' + encodeURIComponent(r.data.next), items, rest, quiet);
      } } });
      holder.append(more);
    }
    return shown.length + (r.data.next ? 1 : 0);
  };
  const shown = await Promise.all([inbox('/v1/runs?status=paused' + q, fromRuns, runs, false),
    inbox('/v1/pending' + (q ? '?' + q.slice(1) : ''), fromCalls, mcp, true)]);
  if (shown[0] + shown[1] === 0) page.append(empty);
}

// toolTexts reads the title and description of the tools named, in one
// request: {name: {title, description}}.
async function toolTexts(names) {
  const uniq = [...new Set(names.filter(Boolean))];
  if (!uniq.length) return byName();
  const r = await call('GET', '/v1/tools?names=' + uniq.map(encodeURIComponent).join(','));
  const out = byName();
  for (const tool of (r.ok && r.data.tools) || []) {
    const f = tool.function || tool;
    out[f.name] = { title: plainText(tool.title), description: plainText(f.description) };
  }
  return out;
}

// preparedRequest shows the request as the engine will send it: what
// the engine adds (credentials) is named, its value "added when sent".
function preparedRequest(req) {
  return el('div', { class: 'prepared' }, el('h3', { text: t('prepared_request') }),
    el('p', null, el('strong', { text: req.method || '' }), ' ', el('code', { class: 'url' }, revealed(req.url))),
    (req.headers || []).length ? table([t('headers'), t('value')], req.headers.map((h) => [el('code', null, revealed(h.name)),
      h.credential ? el('span', { class: 'badge off credential', text: t('added_when_sent') }) : el('code', null, revealed(h.value))])) : null,
    el('h4', { text: t('body') }), req.body ? el('pre', { class: 'body' }, revealed(req.body)) : el('p', { class: 'purpose', text: t('no_body') }),
    req.body_truncated ? el('p', { class: 'purpose', text: t('body_cut') }) : null);
}

// approvalOutcome words what a decision did, from the answer: a run's
// reply (the step of the item, its decision and result) or a direct
// call's {status}; an error answer is a decision not taken here.
function approvalOutcome(res, p, run, decision) {
  if (!res.ok) {
    const e = (res.data && res.data.error) || {};
    return { text: fill('outcome_closed', { message: errorText(e, res.status) }), cls: 'error' };
  }
  if (!run) return { text: t(res.data.status === 'approved' ? 'outcome_approved_direct' : 'outcome_denied_direct'), cls: res.data.status === 'approved' ? 'ok' : '' };
  const step = (res.data.steps || []).find((s) => s.decision && s.decision.pending_id === p.id);
  const outcome = step ? step.decision.outcome : decision === 'approve' ? 'approved' : 'denied';
  if (!step && res.data.status === 'paused') return { text: t('outcome_waiting'), cls: '' };
  if (outcome === 'approved') {
    if (step && step.status === 'ok') return { text: fill('outcome_sent', { status: String(step.http_status || '') }), cls: 'ok' };
    return { text: fill('outcome_failed', { error: (step && (step.error || step.status)) || '' }), cls: 'error' };
  }
  return { text: t({ denied: 'outcome_denied', stale: 'outcome_stale', expired: 'outcome_expired' }[outcome] || 'outcome_denied'), cls: '' };
}

// approvalItem is a call waiting for a person's approval: for whom, what
// the user asked (or who made the call), the tool, the request in full,
// the expiry; Approve and Deny (with an optional reason) then say what
// happened, with a link to the run; onDecided, when given, gets the
// answer (the playground draws the run going on).
function approvalItem(p, run, tool, onDecided) {
  const req = p.request || {};
  const reason = el('input', { attrs: { 'aria-label': t('reason'), placeholder: t('reason'), maxlength: 500, class: 'reason' } });
  const msg = el('div', { class: 'outcome', attrs: { role: 'status' } });
  const buttons = el('div', { class: 'row' }, reason,
    el('button', { class: 'approve', text: t('approve'), on: { click: () => decide('approve') } }), ' ',
    el('button', { class: 'danger deny', text: t('deny'), on: { click: () => decide('deny') } }));
  let item = null;
  async function decide(decision) {
    for (const b of buttons.querySelectorAll('button')) b.disabled = true;
    const body = { decision, reason: reason.value || undefined };
    const res = run ? await call('POST', '/v1/runs/' + encodeURIComponent(run.run_id) + '/resume', { decisions: [Object.assign({ id: p.id }, body)] })
      : await call('POST', '/v1/pending/' + encodeURIComponent(p.id), body);
    const out = approvalOutcome(res, p, run, decision);
    buttons.remove();
    item.dataset.decided = decision;
    msg.replaceChildren(el('p', { class: out.cls, text: out.text }), run ? el('p', null, link(['run', run.run_id], t('open_run'))) : '');
    if (onDecided) onDecided(res);
  }
  const who = run ? userLabel(run.user_id, run.user_name) : userLabel(p.user_id, p.user_name);
  const title = tool && tool.title, desc = tool && tool.description;
  item = el('section', { class: 'approval', attrs: { 'data-id': p.id } },
    el('h2', null, title ? el('span', { class: 'tool-title', text: title + ' ' }) : null, el('code', { text: p.tool })),
    el('p', { class: 'for-user' }, el('span', { class: 'badge', text: fill('for_user', { user: who }) }), ' ',
      run ? link(['run', run.run_id], t('from_run') + ' ' + run.run_id.slice(0, 8))
        : el('span', { class: 'direct-by', text: fill('direct_by', { who: preparedBy(p.prepared_by, { name: p.user_name }) }) })),
    desc ? el('p', { class: 'tool-desc', text: desc }) : null,
    run ? el('blockquote', { class: 'asked' }, el('strong', { text: t('asked') + ': ' }), run.asked ? el('span', { attrs: { translate: 'no' }, text: run.asked }) : el('em', { text: t('asked_none') })) : null,
    preparedRequest(req),
    el('details', null, el('summary', { text: t('arguments') }), json(p.arguments)),
    el('p', { class: 'expires' }, t('expires') + ': ' + fmtTime(p.expires_at)),
    buttons, msg);
  return item;
}

// questionItem is an MCP server's question waiting for the person's
// answer (issue 48 point 4): which server asks, during which tool's call,
// its message as written; a form drawn from its requested_schema (string,
// number, integer, boolean, enum and enum-list fields, defaults filled),
// or a link shown with its host, which the engine never opens. Answer,
// Decline and Cancel POST the answer; the engine checks it against the
// schema and names a field it refuses.
function questionItem(p, tool) {
  const msg = el('div', { class: 'outcome', attrs: { role: 'status' } });
  const props = (p.requested_schema && p.requested_schema.properties) || {};
  const required = new Set((p.requested_schema && p.requested_schema.required) || []);
  // Each field's id is the item's and the field's place: a name alone
  // (two questions asking "confirm", or "a.b" beside "a_b") gave two
  // inputs one id, and a click on one question's label filled the
  // other's field, answering the other server.
  const idOf = (i) => 'q-' + String(p.id).replace(/[^A-Za-z0-9_-]/g, '_') + '-' + i;
  const fields = p.mode === 'form' ? Object.entries(props).map(([name, f], i) => questionField(name, f || {}, required.has(name), idOf(i))) : [];
  const form = el('form', { class: 'question-form', on: { submit: (e) => { e.preventDefault(); answer('accept'); } } },
    fields.map((f) => f.row),
    el('div', { class: 'row' },
      el('button', { class: 'approve', attrs: { type: 'submit' }, text: t('q_submit') }), ' ',
      el('button', { class: 'secondary decline', attrs: { type: 'button' }, text: t('q_decline'), on: { click: () => answer('decline') } }), ' ',
      el('button', { class: 'secondary cancel', attrs: { type: 'button' }, text: t('q_cancel'), on: { click: () => answer('cancel') } })));
  let item = null;
  async function answer(action) {
    const body = { action };
    if (action === 'accept' && p.mode === 'form') {
      body.content = byName(); // a field named __proto__ is answered like any other
      for (const f of fields) {
        const v = f.value();
        if (v !== undefined) body.content[f.name] = v;
      }
    }
    for (const b of form.querySelectorAll('button')) b.disabled = true;
    const res = await call('POST', '/v1/pending/' + encodeURIComponent(p.id), body);
    if (!res.ok) {
      for (const b of form.querySelectorAll('button')) b.disabled = false;
      msg.replaceChildren(errorBox(res));
      if (res.data && res.data.error && res.data.error.code === 'question_closed') form.remove();
      return;
    }
    form.remove();
    item.dataset.answered = action;
    msg.replaceChildren(el('p', { class: action === 'accept' ? 'ok' : '', text: t('q_answered_' + action) }));
  }
  const who = userLabel(p.user_id, p.user_name);
  const title = tool && tool.title;
  item = el('section', { class: 'approval question', attrs: { 'data-id': p.id } },
    el('h2', null, el('span', { class: 'question-server', text: fill('q_asks', { server: '"' + (p.server || '?') + '"' }) })),
    el('p', { class: 'for-user' }, el('span', { class: 'badge', text: fill('for_user', { user: who }) }), ' ',
      el('span', { class: 'question-tool' }, fill('q_during', { tool: '' }), title ? el('span', { class: 'tool-title', text: title + ' ' }) : null, el('code', { text: p.tool })), ' · ',
      p.run_id ? link(['run', p.run_id], t('from_run') + ' ' + p.run_id.slice(0, 8))
        : el('span', { class: 'direct-by', text: fill('direct_by', { who: preparedBy(p.prepared_by, { name: p.user_name }) }) })),
    el('blockquote', { class: 'question-message', attrs: { translate: 'no' } }, revealed(p.message)),
    p.mode === 'url' ? el('p', { class: 'question-link' }, el('span', { text: fill('q_link', { host: p.host || '?' }) }), ' ',
      el('a', { attrs: { href: /^https?:\/\//.test(p.url || '') ? p.url : null, target: '_blank', rel: 'noopener noreferrer nofollow', translate: 'no' }, text: p.url || '' })) : null,
    el('p', { class: 'expires' }, t('expires') + ': ' + fmtTime(p.expires_at)),
    form, msg);
  return item;
}

// questionField draws one field of a question's form, its input's id
// id: {row, name, value()} where value() is what the person entered, in
// the field's type, or undefined when left empty.
function questionField(name, f, required, id) {
  const label = el('label', { attrs: { for: id } }, el('strong', null, revealed(f.title || name)),
    required ? el('span', { class: 'purpose required', text: ' (' + t('q_required') + ')' }) : null);
  const desc = f.description ? el('span', { class: 'purpose' }, revealed(f.description)) : null;
  const options = Array.isArray(f.enum) ? f.enum.map((v, i) => ({ v, label: (f.enumNames && f.enumNames[i]) || String(v) }))
    : Array.isArray(f.oneOf) ? f.oneOf.map((o) => ({ v: o.const, label: o.title || String(o.const) })) : null;
  let input, value;
  if (f.type === 'array' && f.items) {
    const items = Array.isArray(f.items.enum) ? f.items.enum.map((v) => ({ v, label: String(v) }))
      : Array.isArray(f.items.anyOf) ? f.items.anyOf.map((o) => ({ v: o.const, label: o.title || String(o.const) })) : [];
    const def = Array.isArray(f.default) ? f.default : [];
    const boxes = items.map((o) => el('input', { attrs: { type: 'checkbox', value: String(o.v), checked: def.includes(o.v), 'aria-label': o.label } }));
    input = el('span', { attrs: { id } }, items.map((o, i) => el('label', { class: 'choice' }, boxes[i], ' ', o.label)));
    value = () => items.filter((_, i) => boxes[i].checked).map((o) => o.v);
  } else if (options) {
    input = el('select', { attrs: { id, name, required } }, el('option', { attrs: { value: '' }, text: t('q_choose') }),
      options.map((o, i) => el('option', { attrs: { value: String(i), selected: o.v === f.default }, text: o.label })));
    value = () => (input.value === '' ? undefined : options[Number(input.value)].v);
  } else if (f.type === 'boolean') {
    input = el('input', { attrs: { id, name, type: 'checkbox', checked: f.default === true } });
    value = () => input.checked;
  } else if (f.type === 'number' || f.type === 'integer') {
    input = el('input', { attrs: { id, name, type: 'number', required, min: f.minimum, max: f.maximum, step: f.type === 'integer' ? 1 : 'any',
      value: typeof f.default === 'number' ? f.default : null } });
    value = () => (input.value === '' ? undefined : Number(input.value));
  } else if (f.type === 'string') {
    input = el('input', { attrs: { id, name, type: f.format === 'email' ? 'email' : f.format === 'uri' ? 'url' : f.format === 'date' ? 'date' : 'text',
      required, minlength: f.minLength, maxlength: f.maxLength, value: typeof f.default === 'string' ? f.default : null } });
    value = () => (input.value === '' ? undefined : input.value);
  } else {
    return { name, row: el('p', { class: 'purpose' }, label, ' ', fill('q_not_answerable', { type: String(f.type) })), value: () => undefined };
  }
  return { name, row: el('div', { class: 'question-field' }, label, ' ', input, ' ', desc), value };
}
