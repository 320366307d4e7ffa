// The administrator's tokens page (#/tokens) and the page adding a plugin
// from a protocol v1 document (#/add-plugin). A user's session sees
// neither: creating a token is the administrator's alone.
'use strict';

addStrings({
  en: {
    tokens_purpose: 'Per-user API tokens (bx_…) and console-only tokens: create one (its value is shown this once), see them all, revoke one. RuoYi\'s own service token is not here: it is BLINDEXEC_SERVICE_TOKEN (see the README).',
    token_name: 'Name', console_only: 'Console only (signs in to the console; refused on the API and MCP)', perms: 'Permissions (RuoYi perms, comma-separated)', perms_col: 'Permissions',
    perms_hint: 'They narrow what the user may use, e.g. system:user:list', valid_days: 'Valid for (days; empty: no end)', create_token: 'Create token',
    token_once: 'The token — shown this once. Copy it now; the engine keeps only its hash.', token_id: 'Id', token_prefix: 'Starts with', scope: 'Use',
    scope_api: 'API and console', scope_console: 'console only', expires_never: 'never', last_used: 'Last used', created: 'Created', revoke: 'Revoke',
    del_token: 'Revoke token #{id} “{name}” of user {user}? Whoever holds it is refused from now on, and the console sessions signed in with it end.',
    empty_tokens: 'No token yet. Create one above for a user: the user (or an agent acting for the user) signs in or calls the API with it.',
    add_plugin_purpose: 'Paste a protocol v1 plugin document (JSON; // comments allowed). Add checks it as the API does: each problem is shown at the line of its field.',
    plugin_doc: 'Plugin document', add: 'Add', added_plugin: 'Added:', whole_document: 'the document',
    field_errors: 'Problems, at their fields:',
  },
  'zh-CN': {
    tokens_purpose: '用户 API 令牌（bx_…）和仅限控制台的令牌：创建（令牌值只显示这一次）、查看全部、吊销。RuoYi 自己的服务令牌不在这里：它是 BLINDEXEC_SERVICE_TOKEN（见 README）。',
    token_name: '名称', console_only: '仅限控制台（只能登录控制台；API 和 MCP 拒绝它）', perms: '权限（RuoYi 权限字符串，逗号分隔）', perms_col: '权限',
    perms_hint: '用于收窄该用户可用的工具，例如 system:user:list', valid_days: '有效天数（留空：不过期）', create_token: '创建令牌',
    token_once: '令牌——只显示这一次。请立即复制；引擎只保存其哈希。', token_id: 'ID', token_prefix: '开头', scope: '用途',
    scope_api: 'API 和控制台', scope_console: '仅限控制台', expires_never: '永不过期', last_used: '最近使用', created: '创建时间', revoke: '吊销',
    del_token: '吊销用户 {user} 的令牌 #{id}“{name}”？持有者从现在起被拒绝，用它登录的控制台会话随之结束。',
    empty_tokens: '还没有令牌。在上方为用户创建：用户（或代表用户的智能体）用它登录或调用 API。',
    add_plugin_purpose: '粘贴协议 v1 的插件文档（JSON；允许 // 注释）。添加时的校验与 API 相同：每个问题显示在其字段所在的行。',
    plugin_doc: '插件文档', add: '添加', added_plugin: '已添加：', whole_document: '整个文档',
    field_errors: '问题（按字段位置）：',
  },
});

async function pageTokens(page) {
  heading(page, t('tokens'), t('tokens_purpose'));
  const f = {
    user: el('input', { attrs: { id: 'tok-user', type: 'number', min: 1, required: true } }),
    name: el('input', { attrs: { id: 'tok-name', maxlength: 128, autocomplete: 'off' } }),
    console: el('input', { attrs: { id: 'tok-console', type: 'checkbox' } }),
    perms: el('input', { attrs: { id: 'tok-perms', placeholder: 'system:user:list', autocomplete: 'off' } }),
    days: el('input', { attrs: { id: 'tok-days', type: 'number', min: 1 } }),
  };
  const msg = el('div', { attrs: { id: 'tok-msg' } });
  page.append(el('form', { class: 'stack', attrs: { id: 'token-form' }, on: { submit: async (e) => {
    e.preventDefault();
    const body = { user_id: Number(f.user.value), name: f.name.value || undefined, console_only: f.console.checked || undefined };
    const perms = f.perms.value.split(/[\s,]+/).filter(Boolean);
    if (perms.length) body.perms = perms;
    if (f.days.value) body.expires_in_seconds = Number(f.days.value) * 86400;
    const r = await call('POST', '/v1/tokens', body);
    if (!r.ok) return msg.replaceChildren(errorBox(r));
    await drawList();
    // Shown once, here, and nowhere else: the list shows its prefix.
    msg.replaceChildren(el('div', { class: 'warning', attrs: { id: 'token-once', role: 'status' } },
      el('p', { text: t('token_once') }), el('code', { class: 'token-value', attrs: { translate: 'no' }, text: r.data.token })));
    f.name.value = ''; f.perms.value = '';
  } } },
  el('div', { class: 'row' }, el('label', null, t('user_id'), f.user), el('label', null, t('token_name'), f.name), el('label', null, t('valid_days'), f.days)),
  el('label', null, el('span', null, t('perms'), el('span', { class: 'hint', text: ' ' + t('perms_hint') })), f.perms),
  el('label', { class: 'inline' }, f.console, t('console_only')),
  el('div', { class: 'row' }, el('button', { text: t('create_token') }))), msg);
  const list = el('div', { attrs: { id: 'tokens' } });
  page.append(list);
  const drawList = async () => {
    const r = await call('GET', '/v1/tokens');
    if (!r.ok) return list.replaceChildren(errorBox(r));
    const toks = r.data.tokens || [];
    if (!toks.length) return list.replaceChildren(el('p', { class: 'empty', text: t('empty_tokens') }));
    list.replaceChildren(table([t('token_id'), t('user_id'), t('token_name'), t('token_prefix'), t('scope'), t('perms_col'), t('expires'), t('last_used'), t('actions')], toks.map((k) => [
      el('span', { text: '#' + k.token_id }), el('span', { text: String(k.user_id) }), el('span', { attrs: { translate: 'no' }, text: k.token_name || '' }),
      el('code', { text: (k.token_prefix || '') + '…' }),
      el('span', { class: 'badge', text: k.scope === 'console' ? t('scope_console') : t('scope_api') }),
      el('span', { attrs: { translate: 'no' }, text: k.perms || '' }),
      el('span', { text: k.expire_time ? fmtShort(k.expire_time) : t('expires_never') }),
      el('span', { text: fmtShort(k.last_used_time) }),
      el('button', { class: 'danger revoke', attrs: { 'data-id': k.token_id }, text: t('revoke'), on: { click: () => askFirst(fill('del_token', { id: k.token_id, name: k.token_name || '', user: k.user_id }), t('revoke'), async () => {
        const x = await call('DELETE', '/v1/tokens/' + encodeURIComponent(k.token_id));
        if (x.ok) { msg.replaceChildren(); await drawList(); } else msg.replaceChildren(errorBox(x));
      }) } })])));
  };
  await drawList();
}

// lineOf finds the line of a field's path ("execution.base_url",
// "auth_config.mapping[0].target") in a document: each name in turn after
// the one before; -1 when even the first is not there (the document as a
// whole).
function lineOf(lines, field) {
  let from = 0, found = -1;
  for (const name of String(field).replace(/\[\d+\]/g, '').split('.').filter(Boolean)) {
    const key = '"' + name + '"';
    const i = lines.findIndex((l, k) => k >= from && l.includes(key) && /^\s*:/.test(l.slice(l.indexOf(key) + key.length)));
    if (i < 0) break;
    found = i;
    from = i + 1;
  }
  return found;
}

// annotated shows the document line by line with each field's problem
// under the line of that field.
function annotated(text, fields) {
  const lines = text.split('\n');
  const at = new Map();
  for (const f of fields) {
    const i = lineOf(lines, f.field);
    at.set(i, [...(at.get(i) || []), f]);
  }
  const problem = (f) => el('li', { class: 'field-error', attrs: { 'data-field': f.field, translate: 'no' } }, el('strong', { text: f.field + ': ' }), f.message);
  return el('div', { attrs: { id: 'plugin-problems' } }, el('p', { class: 'error', text: t('field_errors') }),
    at.has(-1) ? el('ul', null, el('li', { text: t('whole_document') }), at.get(-1).map(problem)) : null,
    el('ol', { class: 'doc-lines', attrs: { translate: 'no' } }, lines.flatMap((l, i) => [
      // value: the problems between lines are list items too, and must
      // not shift the lines' numbers.
      el('li', { class: at.has(i) ? 'flagged' : null, attrs: { 'data-line': i + 1, value: i + 1 } }, el('code', { text: l || ' ' })),
      ...(at.get(i) || []).map(problem)])));
}

async function pageAddPlugin(page) {
  heading(page, t('add_plugin'), t('add_plugin_purpose'));
  const doc = el('textarea', { attrs: { id: 'add-doc', 'aria-label': t('plugin_doc'), spellcheck: 'false' } });
  const out = el('div', { attrs: { id: 'add-result' } });
  page.append(el('label', null, t('plugin_doc'), doc), el('p', null, el('button', { attrs: { id: 'add-plugin' }, text: t('add'), on: { click: async () => {
    out.replaceChildren();
    // The document as written (comments and all): the engine parses it.
    const opts = fetchOptions('POST');
    opts.headers['Content-Type'] = 'application/json';
    opts.body = doc.value;
    const r = await answer(await fetch('/v1/plugins', opts), '/v1/plugins');
    if (r.ok) return out.append(el('p', { class: 'ok' }, t('added_plugin') + ' ', link(['plugin', r.data.name], r.data.name)));
    out.append(errorBox(r));
    const fields = (r.data && r.data.error && r.data.error.details && r.data.error.details.fields) || [];
    if (fields.length) out.append(annotated(doc.value, fields));
  } } })), out);
}

registerPage('tokens', pageTokens, { admin: true, nav: 'tokens' });
registerPage('add-plugin', pageAddPlugin, { admin: true, nav: 'add_plugin' });
