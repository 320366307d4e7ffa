// The runs (issue 51 point 2): #/runs lists every run of the LLM loop —
// paused, denied and failed ones included — from GET /v1/runs, filtered
// and paged; #/run/<id> reads one as a conversation. Loaded before app.js.
'use strict';

(window.BLINDEXEC_PAGES = window.BLINDEXEC_PAGES || []).push({
  strings: {
    en: {
      runs: 'Runs', runs_purpose: 'Every run of the LLM loop, newest first — paused, denied and failed ones included. Open one to read it as a conversation.',
      run_purpose: 'The run as a conversation: what the user asked, each tool call with its decision and its result (masked, cut for length), the timings and the trace.',
      user: 'User', first_message: 'First message', started: 'Started', ended: 'Last change', duration: 'Duration', model: 'Model', tokens_used: 'Model tokens',
      empty_runs: 'No run matches. Start one on the Playground, or widen the filters.', older: 'Older', newest: 'Newest',
      st_running: 'running', st_paused: 'waits for a decision', st_resuming: 'resuming', st_expired: 'expired', st_completed: 'completed',
      st_max_steps: 'stopped at the step limit', st_budget_exhausted: 'token budget spent', st_failed: 'failed', st_cancelled: 'cancelled',
      role_user: 'User', role_assistant: 'Assistant', role_system: 'System', role_tool: 'Tool result',
      tool_call: 'Calls {tool}', result: 'Result', result_cut: 'Cut for length: {shown} of {total} characters shown.', show_all: 'Show all',
      execution_id: 'Execution id', attempts: 'Attempts', decision: 'Decision', by: 'by {who}',
      dc_approved: 'approved', dc_denied: 'denied', dc_expired: 'expired', dc_stale: 'stale (the request changed)', dc_continued: 'continued', dc_cancelled: 'cancelled',
      step_ok: 'sent', step_error: 'failed', step_refused: 'refused', step_denied: 'denied', step_waiting: 'waits for a decision',
      waits_on: 'This call waits for a decision on the Approvals page.', raw_json: 'Raw JSON', run_error: 'The run ended with an error',
      no_reply_yet: 'The run is still going: its conversation appears when it ends or pauses.', search_tools: 'Searched the tools: {found}',
      cut_run: 'This run was stored cut to fit the database: its longest texts are shortened.', took_ms: '{n} ms',
    },
    'zh-CN': {
      runs: '运行记录', runs_purpose: 'LLM 循环的全部运行，最新的在前——包括待审批、被拒绝和失败的运行。打开一条即可按对话阅读。',
      run_purpose: '按对话阅读运行：用户的请求、每次工具调用及其决定和结果（已遮蔽、过长则截断）、耗时与追踪。',
      user: '用户', first_message: '首条消息', started: '开始时间', ended: '最近变化', duration: '耗时', model: '模型', tokens_used: '模型令牌',
      empty_runs: '没有匹配的运行。可在试用页发起一次运行，或放宽筛选条件。', older: '更早', newest: '最新',
      st_running: '运行中', st_paused: '等待决定', st_resuming: '恢复中', st_expired: '已过期', st_completed: '已完成',
      st_max_steps: '达到步数上限', st_budget_exhausted: '令牌预算已用尽', st_failed: '失败', st_cancelled: '已取消',
      role_user: '用户', role_assistant: '助手', role_system: '系统', role_tool: '工具结果',
      tool_call: '调用 {tool}', result: '结果', result_cut: '过长已截断：显示 {shown} / {total} 个字符。', show_all: '显示全部',
      execution_id: '执行 ID', attempts: '尝试次数', decision: '决定', by: '决定者：{who}',
      dc_approved: '已批准', dc_denied: '已拒绝', dc_expired: '已过期', dc_stale: '已失效（请求已变化）', dc_continued: '已继续', dc_cancelled: '已取消',
      step_ok: '已发送', step_error: '失败', step_refused: '被拒绝', step_denied: '已拒绝', step_waiting: '等待决定',
      waits_on: '该调用正在待审批页等待决定。', raw_json: '原始 JSON', run_error: '运行以错误结束',
      no_reply_yet: '运行仍在进行：结束或暂停后显示对话。', search_tools: '搜索了工具：{found}',
      cut_run: '该运行为适应数据库而被截断保存：最长的文本已缩短。', took_ms: '{n} 毫秒',
    },
  },
  pages: { runs: (page, parts, rest) => pageRuns(page, rest), run: (page, parts) => pageRun(page, parts[1]) },
  nav: [['runs', 'runs', 'both']],
});

const RUN_STATUSES = ['running', 'paused', 'completed', 'max_steps', 'budget_exhausted', 'failed', 'cancelled', 'expired'];
const statusText = (s) => (I18N.en['st_' + s] ? t('st_' + s) : s);
const statusBadge = (s) => el('span', { class: 'badge ' + (s === 'completed' ? 'on' : s === 'failed' || s === 'cancelled' || s === 'expired' ? 'off' : 'warn'), text: statusText(s) });
// localInput and fromLocal turn an RFC 3339 time into a datetime-local
// input's value (the browser's zone) and back.
const localInput = (iso) => {
  if (!iso) return '';
  const d = new Date(iso);
  return new Date(d.getTime() - d.getTimezoneOffset() * 60000).toISOString().slice(0, 16);
};
const fromLocal = (v) => (v ? new Date(v).toISOString().replace(/\.\d{3}Z$/, 'Z') : '');

// pageRuns lists a page of runs, filtered by user, status and time; the
// filters and the page's cursor live in the address.
async function pageRuns(page, raw) {
  heading(page, t('runs'), t('runs_purpose'));
  const q = new URLSearchParams(raw || '');
  const go = (n) => { location.hash = '#/runs/' + n.toString(); };
  const user = el('input', { attrs: { type: 'number', min: 1, id: 'runs-user', value: isAdmin() ? q.get('user_id') || '' : session.user_id, placeholder: t('all_users') } });
  if (!isAdmin()) user.disabled = true;
  const status = el('select', { attrs: { id: 'runs-status' } }, [['', t('any_status')], ...RUN_STATUSES.map((s) => [s, statusText(s)])]
    .map(([v, text]) => el('option', { attrs: { value: v, selected: (q.get('status') || '') === v }, text })));
  const since = el('input', { attrs: { type: 'datetime-local', id: 'runs-since', value: localInput(q.get('since')) } });
  const until = el('input', { attrs: { type: 'datetime-local', id: 'runs-until', value: localInput(q.get('until')) } });
  page.append(el('form', { class: 'row', attrs: { id: 'runs-filter' }, on: { submit: (e) => {
    e.preventDefault();
    const n = new URLSearchParams();
    if (isAdmin() && user.value) n.set('user_id', user.value);
    if (status.value) n.set('status', status.value);
    if (since.value) n.set('since', fromLocal(since.value));
    if (until.value) n.set('until', fromLocal(until.value));
    go(n);
  } } }, el('label', null, t('user_id'), user), el('label', null, t('status'), status), el('label', null, t('since'), since),
  el('label', null, t('until'), until), el('button', { text: t('filter') })));
  const api = new URLSearchParams({ limit: '50' });
  for (const k of ['user_id', 'status', 'since', 'until', 'cursor']) if (q.get(k) && (k !== 'user_id' || isAdmin())) api.set(k, q.get(k));
  const r = await call('GET', '/v1/runs?' + api.toString());
  if (!r.ok) return page.append(errorBox(r));
  const runs = r.data.runs || [];
  const moves = () => {
    const first = new URLSearchParams(q); first.delete('cursor');
    const next = new URLSearchParams(q); next.set('cursor', r.data.next || '');
    return el('nav', { class: 'pager', attrs: { 'aria-label': t('pages') } }, el('span', { class: 'moves' },
      el('button', { class: 'secondary newest', text: '« ' + t('newest'), attrs: { type: 'button', disabled: !q.get('cursor') }, on: { click: () => go(first) } }),
      el('button', { class: 'secondary older', text: t('older') + ' ›', attrs: { type: 'button', disabled: !r.data.next }, on: { click: () => go(next) } })));
  };
  if (!runs.length) return page.append(el('p', { class: 'empty', text: t('empty_runs') }), q.get('cursor') ? moves() : '');
  page.append(el('div', { attrs: { id: 'runs' } }, table([[t('started'), 'when'], [t('user'), 'who'], [t('status'), 'status'], [t('first_message'), 'desc'], [t('run_id'), 'id']],
    runs.map((run) => [el('span', { text: fmtShort(run.create_time), attrs: { title: fmtTime(run.create_time) } }),
      el('span', { text: userLabel(run.user_id, run.user_name) }), statusBadge(run.status),
      el('div', { class: 'clamp', text: run.first_message || '', attrs: { title: run.first_message || '', translate: 'no' } }),
      Object.assign(link(['run', run.run_id], run.run_id), { translate: false })]), 'runs')), moves()); // an id, not words
}

// cutText is at most n characters of s, and whether it was cut.
const cutText = (s, n) => (s.length > n ? [s.slice(0, n), true] : [s, false]);
const RESULT_SHOWN = 2000;

// messageText is a chat message's text: its content or its text parts.
const messageText = (m) => (typeof m.content === 'string' ? m.content
  : Array.isArray(m.content) ? m.content.filter((p) => p.type === 'text').map((p) => p.text).join(' ') : '');

// resultBlock shows a tool's result as the engine masked it, cut for
// length with a Show all.
function resultBlock(text) {
  const [shown, cut] = cutText(text, RESULT_SHOWN);
  const pre = el('pre', { class: 'result', text: shown });
  const box = el('div', { class: 'tool-result' }, el('h4', { text: t('result') }), pre);
  if (cut) {
    const note = el('p', { class: 'purpose cut', text: fill('result_cut', { shown: RESULT_SHOWN.toLocaleString(lang), total: text.length.toLocaleString(lang) }) });
    box.append(note, el('button', { class: 'secondary show-all', text: t('show_all'), attrs: { type: 'button' }, on: { click: (e) => { pre.textContent = text; note.remove(); e.target.remove(); } } }));
  }
  return box;
}

// stepFacts are a tool call's decision, outcome and timings, in words.
function stepFacts(step, pending) {
  if (!step) return pending ? el('p', { class: 'waits' }, el('span', { class: 'badge warn', text: t('step_waiting') }), ' ', t('waits_on'), ' ', link(['approvals'], t('approvals'))) : null;
  const facts = [];
  const d = step.decision;
  if (d) facts.push([t('decision'), el('span', null, el('span', { class: 'badge ' + (d.outcome === 'approved' || d.outcome === 'continued' ? 'on' : 'off'), text: I18N.en['dc_' + d.outcome] ? t('dc_' + d.outcome) : d.outcome }),
    d.by ? ' ' + fill('by', { who: preparedBy(d.by, {}) }) : '', d.at ? ' · ' + fmtTime(d.at) : '')]);
  facts.push([t('status'), el('span', null, el('span', { class: 'badge ' + (step.status === 'ok' ? 'on' : 'off'), text: I18N.en['step_' + step.status] ? t('step_' + step.status) : step.status }),
    step.http_status ? ' HTTP ' + step.http_status : '')]);
  facts.push([t('latency'), el('span', { text: String(step.latency_ms || 0) })]);
  if (step.attempts > 1) facts.push([t('attempts'), el('span', { text: String(step.attempts) })]);
  if (step.execution_id) facts.push([t('execution_id'), el('code', { text: step.execution_id })]);
  if (step.error) facts.push([t('error'), el('span', { class: 'error', text: step.error })]);
  return el('dl', { class: 'facts' }, facts.flatMap(([k, v]) => [el('dt', { text: k }), el('dd', null, v)]));
}

// conversation draws a run's messages — the request's, then the reply's
// — each tool call with its decision, outcome and result beneath it (a
// call still waiting, with a link to Approvals).
function conversation(run) {
  const steps = byName();
  for (const s of run.steps || []) if (s.tool_call_id) steps[s.tool_call_id] = s;
  const pending = byName();
  for (const p of run.pending || []) pending[p.tool_call_id] = p;
  const results = byName();
  for (const m of run.messages || []) if (m.role === 'tool' && m.tool_call_id) results[m.tool_call_id] = m;
  const called = new Set((run.messages || []).flatMap((m) => (m.tool_calls || []).map((c) => c.id)));
  const convo = el('ol', { class: 'conversation' });
  const say = (m) => {
    const role = m.role || 'assistant';
    const li = el('li', { class: 'msg', attrs: { 'data-role': role } }, el('div', { class: 'who', text: I18N.en['role_' + role] ? t('role_' + role) : role }));
    const text = messageText(m);
    if (role === 'tool') li.append(resultBlock(text));
    else if (text) li.append(el('div', { class: 'text', attrs: { translate: 'no' }, text }));
    for (const c of m.tool_calls || []) {
      const name = (c.function && c.function.name) || '';
      const step = steps[c.id];
      const call = el('div', { class: 'tool-call', attrs: { 'data-tool': name } }, el('h3', { text: fill('tool_call', { tool: name }) }),
        el('pre', { class: 'args', text: (c.function && c.function.arguments) || '' }));
      if (step && step.found) call.append(el('p', { text: fill('search_tools', { found: step.found.join(', ') }) }));
      else call.append(stepFacts(step, pending[c.id]) || '');
      if (results[c.id]) call.append(resultBlock(messageText(results[c.id])));
      li.append(call);
    }
    convo.append(li);
  };
  for (const m of run.request_messages || []) say(m);
  for (const m of run.messages || []) if (!(m.role === 'tool' && called.has(m.tool_call_id))) say(m);
  return convo;
}

// pageRun reads a run as a conversation.
async function pageRun(page, id) {
  heading(page, t('run') + ' ' + id, t('run_purpose'));
  const r = await call('GET', '/v1/runs/' + encodeURIComponent(id));
  if (!r.ok) return page.append(errorBox(r));
  const run = r.data;
  const usage = run.usage || {};
  const took = run.create_time && run.update_time ? Date.parse(run.update_time) - Date.parse(run.create_time) : null;
  const meta = [[t('user'), el('span', { text: userLabel(run.user_id, run.user_name) })], [t('status'), statusBadge(run.status)],
    [t('started'), el('span', { text: fmtTime(run.create_time) })], [t('ended'), el('span', { text: fmtTime(run.update_time) })]];
  if (took !== null) meta.push([t('duration'), el('span', { text: fill('took_ms', { n: took.toLocaleString(lang) }) })]);
  if (usage.total_tokens) meta.push([t('tokens_used'), el('span', { text: usage.total_tokens.toLocaleString(lang) })]);
  if (run.trace_id) meta.push([t('trace_id'), el('a', { class: 'trace-id', attrs: { translate: 'no', href: '#/activity/trace_id=' + encodeURIComponent(run.trace_id) }, text: run.trace_id })]);
  page.append(el('dl', { class: 'facts run-meta' }, meta.flatMap(([k, v]) => [el('dt', { text: k }), el('dd', null, v)])));
  if (run.error) page.append(el('div', { class: 'error', attrs: { role: 'alert' } }, el('strong', { text: t('run_error') + ': ' }), errorText(run.error)));
  if (run.cut) page.append(el('p', { class: 'warning', text: t('cut_run') }));
  const convo = conversation(run);
  if (!run.messages && !run.request_messages) page.append(el('p', { class: 'empty', text: t('no_reply_yet') }));
  convo.id = 'conversation';
  page.append(convo, el('details', { class: 'raw' }, el('summary', { text: t('raw_json') }), json(run)));
}
