// The playground (issue 51 point 3): pick an agent or tools, type a
// message and watch the run stream (POST /v1/runs as server-sent
// events); a call that waits for a person is decided in place, by
// whoever may decide it on the Approvals page (the engine checks: the
// same route). The administrator names the user the run acts for: a run
// for no user is never started silently. Loaded before app.js.
'use strict';

(window.BLINDEXEC_PAGES = window.BLINDEXEC_PAGES || []).push({
  strings: {
    en: {
      playground: 'Playground', playground_purpose: 'Try the loop: pick an agent or tools, type a message and watch the run. A call that waits for a person is decided here by whoever may decide it on the Approvals page.',
      agent: 'Agent', no_agent: '(no agent: the tools below)', tools_pick: 'Tools (names, separated by commas)',
      pg_agent_tools: 'The agent\'s tools now (each narrowed to what the user may use): {tools}', agent_empty: 'This agent selects no enabled tool.',
      message: 'Message', send: 'Send', new_chat: 'New conversation', acting_for: 'The run acts for {user}: their credentials, permissions and approvals.',
      as_yourself: 'The run acts for you, {user}.', user_needed: 'user_id: name the user the run acts for — a run for no user (user 0) holds no permission and no credential.',
      message_needed: 'message: type what the assistant should do.', running: 'Running…', calling: 'Calling {tool}…',
      run_ended: 'The run ended: {status}.', run_paused: 'The run waits for a decision on the call below.',
    },
    'zh-CN': {
      playground: '试用', playground_purpose: '试用 LLM 循环：选择智能体或工具，输入消息并观看运行。需要人工决定的调用可在此决定——仅限能在待审批页决定它的人。',
      agent: '智能体', no_agent: '（不选智能体：使用下方工具）', tools_pick: '工具（名称，以逗号分隔）',
      pg_agent_tools: '该智能体当前的工具（每个都按用户可用的范围收窄）：{tools}', agent_empty: '该智能体没有选中任何已启用的工具。',
      message: '消息', send: '发送', new_chat: '新对话', acting_for: '本次运行代表 {user}：使用其凭据、权限和审批。',
      as_yourself: '本次运行代表你自己：{user}。', user_needed: 'user_id：请指定本次运行代表的用户——不代表任何用户（用户 0）的运行没有权限，也没有凭据。',
      message_needed: 'message：请输入助手要做的事。', running: '运行中……', calling: '正在调用 {tool}……',
      run_ended: '运行结束：{status}。', run_paused: '运行正在等待对下方调用的决定。',
    },
  },
  pages: { playground: (page) => pagePlayground(page) },
  nav: [['playground', 'playground', 'both']],
});

// sseEvents reads a text/event-stream answer, calling on(name, data) for
// each event.
async function sseEvents(r, on) {
  const reader = r.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  const flush = (block) => {
    let name = 'message', data = '';
    for (const line of block.split('\n')) {
      if (line.startsWith('event: ')) name = line.slice(7);
      else if (line.startsWith('data: ')) data += line.slice(6);
    }
    if (data) on(name, JSON.parse(data));
  };
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += value;
    for (let i; (i = buf.indexOf('\n\n')) >= 0; buf = buf.slice(i + 2)) flush(buf.slice(0, i));
  }
  if (buf.trim()) flush(buf);
}

async function pagePlayground(page) {
  heading(page, t('playground'), t('playground_purpose'));
  const admin = isAdmin();
  const user = el('input', { attrs: { type: 'number', min: 1, id: 'pg-user', value: admin ? '' : session.user_id, required: admin } });
  if (!admin) user.disabled = true;
  const whoLine = el('p', { class: 'acting', attrs: { id: 'pg-acting', role: 'status' } });
  const sayWho = () => {
    const id = Number(user.value);
    whoLine.textContent = !id ? '' : admin ? fill('acting_for', { user: userLabel(id) }) : fill('as_yourself', { user: userLabel(id) });
  };
  user.addEventListener('input', sayWho);
  sayWho();
  const agent = el('select', { attrs: { id: 'pg-agent' } }, el('option', { attrs: { value: '' }, text: t('no_agent') }));
  const agentInfo = el('p', { class: 'purpose', attrs: { id: 'pg-agent-tools' } });
  const tools = el('input', { attrs: { id: 'pg-tools', placeholder: 'lookup, delete_customer' } }); // tool names: not translated
  const text = el('textarea', { attrs: { id: 'pg-message', 'aria-label': t('message') } });
  text.style.minHeight = '80px';
  const convo = el('ol', { class: 'conversation', attrs: { id: 'pg-convo' } });
  const status = el('div', { attrs: { id: 'pg-status', role: 'status' } });
  let history = []; // the conversation so far, as the next run's messages
  let agentTools = null;
  const ag = admin ? await call('GET', '/v1/agents') : { ok: false };
  const agents = byName();
  for (const a of (ag.ok && ag.data.agents) || []) {
    if (a.status === '1') continue;
    agents[a.name] = a;
    agent.append(el('option', { attrs: { value: a.name, translate: 'no' }, text: a.name + (a.description ? ' — ' + a.description : '') }));
  }
  agent.addEventListener('change', () => {
    const a = agents[agent.value];
    agentTools = a ? a.tool_names || [] : null;
    tools.disabled = !!a;
    agentInfo.textContent = !a ? '' : agentTools.length ? fill('pg_agent_tools', { tools: agentTools.join(', ') }) : t('agent_empty');
  });
  const line = (role, kids) => {
    const li = el('li', { class: 'msg', attrs: { 'data-role': role } }, el('div', { class: 'who', text: t('role_' + role) }), kids);
    convo.append(li);
    return li;
  };
  // draw shows the conversation as the run's reply has it, as the run
  // page does (each call with its decision and result).
  const draw = (reply, request) => {
    convo.replaceChildren(...conversation(Object.assign({}, reply, { request_messages: request })).children);
  };
  // ended says how the run ended, links to it, and offers its waiting
  // calls to decide: a decision resumes it (the Approvals page's route).
  const ended = async (reply, request) => {
    draw(reply, request);
    const run = { run_id: reply.run_id, user_id: Number(user.value) || null, asked: messageText(request[request.length - 1]) };
    status.replaceChildren(el('p', { class: reply.status === 'completed' ? 'ok' : reply.status === 'paused' ? '' : 'error',
      text: reply.status === 'paused' ? t('run_paused') : fill('run_ended', { status: statusText(reply.status) }) }),
    reply.error ? el('p', { class: 'error', text: errorText(reply.error) }) : '',
    el('p', null, link(['run', reply.run_id], t('open_run'))));
    if (reply.status !== 'paused') {
      history = request.concat(reply.messages || []);
      return;
    }
    const texts = await toolTexts((reply.pending || []).map((p) => p.tool));
    for (const p of reply.pending || []) {
      const item = p.kind === 'authorization' ? authorizationItem(p, reply.run_id)
        : approvalItem(p, run, texts[p.tool], (res) => { if (res.ok && res.data.run_id) ended(res.data, request); });
      status.append(item);
    }
  };
  const send = async () => {
    status.replaceChildren();
    if (admin && !(Number(user.value) > 0)) return status.append(el('p', { class: 'error', attrs: { role: 'alert' }, text: t('user_needed') }));
    if (!text.value.trim()) return status.append(el('p', { class: 'error', attrs: { role: 'alert' }, text: t('message_needed') }));
    const names = agent.value ? [] : tools.value.split(',').map((s) => s.trim()).filter(Boolean);
    if (agent.value && !(agentTools || []).length) return status.append(el('p', { class: 'error', attrs: { role: 'alert' }, text: t('agent_empty') }));
    const request = history.concat([{ role: 'user', content: text.value }]);
    line('user', el('div', { class: 'text', attrs: { translate: 'no' }, text: text.value }));
    text.value = '';
    const body = { user_id: Number(user.value), messages: request, options: { stream: true } };
    // An agent is named, not its tools spelled out: the engine selects
    // them, holds the run to them when it resumes, and refuses an agent
    // the user may not use.
    if (agent.value) body.agent = agent.value;
    else if (names.length) body.plugin_names = names;
    status.append(el('p', { class: 'purpose', text: t('running') }));
    const opts = fetchOptions('POST', body);
    opts.headers.Accept = 'text/event-stream';
    const r = await fetch('/v1/runs', opts);
    if (!/^text\/event-stream/.test(r.headers.get('Content-Type') || '')) return status.replaceChildren(errorBox(await answer(r, '/v1/runs')));
    // Deltas are drawn as they come, in a line of their own; the reply,
    // which holds the calls and results too, replaces them at the end.
    let live = null, last = null;
    await sseEvents(r, (name, data) => {
      if (name === 'message.delta') {
        if (!live) live = line('assistant', el('div', { class: 'text streaming', attrs: { translate: 'no' } }));
        live.querySelector('.text').textContent += data.content || '';
      } else if (name === 'tool.started') {
        live = null;
        status.replaceChildren(el('p', { class: 'purpose', text: fill('calling', { tool: data.tool || '' }) }));
      } else if (name === 'run.completed' || name === 'run.failed' || name === 'run.paused') last = data;
    });
    convo.querySelectorAll('.streaming').forEach((n) => n.closest('li').remove());
    if (!last) return status.replaceChildren(el('p', { class: 'error', text: 'HTTP ' + r.status }));
    await ended(last, request);
  };
  page.append(el('div', { class: 'row' }, el('label', null, t('user_id'), user), admin ? el('label', null, t('agent'), agent) : null,
    el('label', null, t('tools_pick'), tools)), whoLine, agentInfo, convo,
  el('form', { class: 'stack', attrs: { id: 'pg-form' }, on: { submit: (e) => { e.preventDefault(); send(); } } },
    el('label', null, t('message'), text),
    el('div', { class: 'row' }, el('button', { attrs: { type: 'submit', id: 'pg-send' }, text: t('send') }),
      el('button', { class: 'secondary', attrs: { type: 'button', id: 'pg-new' }, text: t('new_chat'), on: { click: () => { history = []; convo.replaceChildren(); status.replaceChildren(); } } }))),
  status);
}
