// Access (issue 46 point 5): the administrator sees who may use a tool —
// the permissions it needs, the RuoYi roles whose menus grant them — and
// asks why a user may (not) use it: GET /v1/tools/{name}/access, the
// executor's own decision said step by step. What each agent holds is
// listed below. A user's session sees its own tools on the Tools page
// (the engine lists only those), not this page. Loaded before app.js.
'use strict';

(window.BLINDEXEC_PAGES = window.BLINDEXEC_PAGES || []).push({
  strings: {
    en: {
      access: 'Access', access_purpose: 'Who may use a tool: the permissions it needs, the RuoYi roles whose menus grant them, and why a user may or may not use it — the decision every call of that user takes.',
      tool: 'Tool', check: 'Check', needs_perms: 'Needs one of these permissions', needs_none: 'No permission: it follows the rule for plugins without permissions.',
      mode_label: 'Plugins without permissions', mode_open: 'usable by every user (BLINDEXEC_TOOL_ACCESS=open)', mode_perms: 'usable by no user (BLINDEXEC_TOOL_ACCESS=perms)',
      source_label: 'Users\' permissions from', src_ruoyi: 'RuoYi\'s tables (BLINDEXEC_PERMISSIONS=ruoyi)', src_yudao: 'ruoyi-vue-pro\'s tables (yudao)', src_query: 'the operator\'s query',
      src_none: 'no database (BLINDEXEC_PERMISSIONS=none)', src_token: 'token', src_payload: 'payload', src_unchecked: 'nowhere: this engine applies no access rule',
      roles_granting: 'RuoYi roles whose menus grant it', role: 'Role', role_key: 'Role key', grants_perm: 'Through the permission',
      no_roles: 'No enabled role\'s enabled menu grants it: only RuoYi\'s administrator (user 1), who holds every permission, may use it.',
      tool_disabled: 'This plugin is disabled: no one may use it.',
      may_use: '{user} may use {tool}.', may_not_use: '{user} may not use {tool}.', why: 'Why',
      r_open: 'It needs no permission and plugins without permissions are open: every user may use it.',
      r_perms_mode: 'It needs no permission, but plugins without permissions are closed (BLINDEXEC_TOOL_ACCESS=perms): no user may use it until an administrator gives it permissions.',
      r_no_user: 'No user (user 0) holds no permission.', r_no_source: 'No source carries the user\'s permissions (BLINDEXEC_PERMISSIONS=none, no payload, no token): nothing is held.',
      r_narrow_yes: 'The {source}\'s permissions hold one of those it needs.', r_narrow_no: 'The {source}\'s permissions hold none of those it needs.',
      r_source_yes: 'The user\'s permissions in {source} hold one of those it needs.', r_source_no: 'The user\'s permissions in {source} hold none of those it needs.',
      r_all_perms: 'The user holds *:*:* in {source} (RuoYi\'s administrator): every permission.',
      r_unavailable: 'The user\'s permissions could not be read from {source}: the call is refused, not opened.',
      r_unchecked: 'This engine applies no access rule: every user may use every tool.', r_disabled: 'The plugin is disabled: no one may use it.',
      r_login: '{source} would not log this user in (missing, disabled or deleted): the user may use no tool, with or without permissions.',
      agents: 'Agents', access_agents_purpose: 'What each agent holds: its selection and the enabled tools it picks now. An agent never grants a tool: each is still narrowed to what the user may use.',
      selection: 'Selection', tools_now: 'Tools now', empty_agents: 'No agent yet.', by_names: 'names', by_tags: 'tags', by_sources: 'sources',
      set_perms: 'Permissions it needs', set_perms_hint: 'RuoYi permission strings, comma-separated (system:user:list): a user whose roles\' menus grant one of them may use it. Empty: none. Kept across re-imports.',
    },
    'zh-CN': {
      access: '访问权限', access_purpose: '谁可以使用某个工具：它需要的权限、菜单授予这些权限的若依角色，以及某个用户为什么可以或不可以使用它——即该用户每次调用时的判定。',
      tool: '工具', check: '查询', needs_perms: '需要以下权限之一', needs_none: '不需要权限：按无权限插件的规则处理。',
      mode_label: '无权限的插件', mode_open: '所有用户可用（BLINDEXEC_TOOL_ACCESS=open）', mode_perms: '任何用户都不可用（BLINDEXEC_TOOL_ACCESS=perms）',
      source_label: '用户权限来源', src_ruoyi: '若依的数据表（BLINDEXEC_PERMISSIONS=ruoyi）', src_yudao: 'ruoyi-vue-pro 的数据表（yudao）', src_query: '运维人员配置的查询',
      src_none: '不读数据库（BLINDEXEC_PERMISSIONS=none）', src_token: '令牌', src_payload: '载荷', src_unchecked: '无：此引擎不做访问控制',
      roles_granting: '菜单授予该权限的若依角色', role: '角色', role_key: '角色权限字符', grants_perm: '授予的权限',
      no_roles: '没有已启用角色的已启用菜单授予该权限：只有拥有全部权限的若依管理员（用户 1）可以使用。',
      tool_disabled: '该插件已停用：任何人都不能使用。',
      may_use: '{user} 可以使用 {tool}。', may_not_use: '{user} 不能使用 {tool}。', why: '原因',
      r_open: '它不需要权限，且无权限的插件对所有人开放：所有用户都可以使用。',
      r_perms_mode: '它不需要权限，但无权限的插件不开放（BLINDEXEC_TOOL_ACCESS=perms）：管理员为其设置权限之前，任何用户都不能使用。',
      r_no_user: '无用户（用户 0）不持有任何权限。', r_no_source: '没有任何来源提供该用户的权限（BLINDEXEC_PERMISSIONS=none，且没有载荷或令牌权限）：不持有任何权限。',
      r_narrow_yes: '{source}的权限包含其所需权限之一。', r_narrow_no: '{source}的权限不包含其所需的任何权限。',
      r_source_yes: '该用户在 {source} 中的权限包含其所需权限之一。', r_source_no: '该用户在 {source} 中的权限不包含其所需的任何权限。',
      r_all_perms: '该用户在 {source} 中持有 *:*:*（若依管理员）：拥有全部权限。',
      r_unavailable: '无法从 {source} 读取该用户的权限：调用被拒绝，而不是放行。',
      r_unchecked: '此引擎不做访问控制：所有用户都可以使用所有工具。', r_disabled: '该插件已停用：任何人都不能使用。',
      r_login: '{source}不允许该用户登录（不存在、已停用或已删除）：无论是否需要权限，该用户都不能使用任何工具。',
      agents: '智能体', access_agents_purpose: '每个智能体包含什么：它的选择范围和当前选中的已启用工具。智能体从不授予工具：每个工具仍按用户可用的范围收窄。',
      selection: '选择范围', tools_now: '当前工具', empty_agents: '还没有智能体。', by_names: '名称', by_tags: '标签', by_sources: '来源',
      set_perms: '所需权限', set_perms_hint: '若依权限字符串，逗号分隔（system:user:list）：角色菜单授予其中之一的用户可以使用它。留空：不需要权限。重新导入后保留。',
    },
  },
  pages: { access: (page, parts) => pageAccess(page, parts[1], parts[2]) },
  nav: [['access', 'access', 'admin']],
});

// permsForm sets the permissions a tool needs (POST /v1/plugins/perms),
// the grant a RuoYi role's menus then give; the page redraws with the
// decision they make. On a refusal what was typed stays.
function permsForm(tool, perms) {
  const input = el('input', { attrs: { id: 'access-perms', value: perms.join(', '), autocomplete: 'off', placeholder: 'system:user:list' } });
  const msg = el('div', { attrs: { id: 'access-perms-msg' } });
  return el('form', { class: 'stack', attrs: { id: 'access-perms-form' }, on: { submit: async (e) => {
    e.preventDefault();
    const list = input.value.split(/[\s,]+/).filter(Boolean);
    const r = await call('POST', '/v1/plugins/perms', { names: [tool], perms: list });
    if (r.ok) route(); else msg.replaceChildren(errorBox(r));
  } } }, el('label', null, el('span', null, t('set_perms'), el('span', { class: 'hint', text: ' ' + t('set_perms_hint') })), input),
  el('div', { class: 'row' }, el('button', { attrs: { id: 'access-perms-save' }, text: t('save') })), msg);
}

// stepText words a step of the decision in the reader's language.
function stepText(s) {
  const src = !s.source ? '' : I18N.en['src_' + s.source] ? t('src_' + s.source) : s.source;
  const key = s.reason === 'narrow' || s.reason === 'source' ? 'r_' + s.reason + (s.grants ? '_yes' : '_no') : 'r_' + s.reason;
  return I18N.en[key] ? fill(key, { source: src }) : s.message;
}

async function pageAccess(page, tool, uid) {
  heading(page, t('access'), t('access_purpose'));
  if (!isAdmin()) return page.append(el('p', { class: 'error', text: t('forbidden') }));
  const name = el('input', { attrs: { id: 'access-tool', value: tool || '', required: true, autocomplete: 'off' } });
  const who = el('input', { attrs: { type: 'number', min: 0, id: 'access-user', value: uid || '', placeholder: t('all_users') } });
  page.append(el('form', { class: 'row', attrs: { id: 'access-form' }, on: { submit: (e) => {
    e.preventDefault();
    location.hash = '#/access/' + encodeURIComponent(name.value.trim()) + (who.value ? '/' + encodeURIComponent(who.value) : '');
  } } }, el('label', null, t('tool'), name), el('label', null, t('user_id'), who), el('button', { text: t('check') })));
  const out = el('div', { attrs: { id: 'access-result' } });
  page.append(out);
  if (tool) {
    const r = await call('GET', '/v1/tools/' + encodeURIComponent(tool) + '/access' + (uid ? '?user_id=' + encodeURIComponent(uid) : ''));
    if (!r.ok) out.append(errorBox(r));
    else {
      const a = r.data;
      const facts = [[t('needs_perms'), (a.perms || []).length ? el('span', null, a.perms.map((p) => el('code', { class: 'perm', text: p })).flatMap((c, i) => (i ? [', ', c] : [c])))
        : el('span', { text: t('needs_none') })], [t('mode_label'), el('span', { text: t('mode_' + a.mode) })],
      [t('source_label'), el('span', { text: I18N.en['src_' + a.source] ? t('src_' + a.source) : a.source })]];
      out.append(el('h2', null, el('code', { text: a.tool })), el('dl', { class: 'facts' }, facts.flatMap(([k, v]) => [el('dt', { text: k }), el('dd', null, v)])));
      out.append(permsForm(a.tool, a.perms || []));
      if (!a.enabled) out.append(el('p', { class: 'warning', text: t('tool_disabled') }));
      if (a.roles) {
        out.append(el('h3', { text: t('roles_granting') }), a.roles.length ? el('div', { attrs: { id: 'access-roles' } }, table([t('role'), t('role_key'), t('grants_perm')],
          a.roles.map((ro) => [el('span', { attrs: { translate: 'no' }, text: ro.role_name }), el('code', { text: ro.role_key }), el('code', { text: ro.grants })]))) : el('p', { class: 'empty', text: t('no_roles') }));
      }
      if (a.decision) {
        const d = a.decision;
        const user = userLabel(a.user_id, a.user_name);
        out.append(el('div', { attrs: { id: 'access-decision', 'data-allowed': String(d.allowed) } },
          el('p', { class: d.allowed ? 'ok verdict' : 'error verdict', text: fill(d.allowed ? 'may_use' : 'may_not_use', { user, tool: a.tool }) }),
          el('h3', { text: t('why') }), el('ol', { class: 'steps' }, d.steps.map((s) => el('li', { class: s.grants ? 'ok' : 'error', attrs: { 'data-reason': s.reason, title: s.message } }, stepText(s))))));
      }
    }
  }
  page.append(el('h2', { text: t('agents') }), el('p', { class: 'purpose', text: t('access_agents_purpose') }));
  const ag = await call('GET', '/v1/agents');
  if (!ag.ok) return page.append(errorBox(ag));
  const agents = ag.data.agents || [];
  if (!agents.length) return page.append(el('p', { class: 'empty', text: t('empty_agents') }));
  const sel = (a) => {
    const s = a.tools || {};
    return [['by_names', s.names], ['by_tags', s.tags], ['by_sources', s.sources]].filter(([, v]) => v && v.length).map(([k, v]) => t(k) + ': ' + v.join(', ')).join(' · ');
  };
  page.append(el('div', { attrs: { id: 'agents' } }, table([t('name'), t('selection'), t('needs_perms'), t('status'), t('tools_now')], agents.map((a) => [
    el('span', { attrs: { translate: 'no' } }, el('strong', { text: a.name }), a.description ? el('div', { class: 'purpose', text: a.description }) : null),
    el('span', { text: sel(a) }), (a.perms || []).length ? el('code', { text: a.perms.join(', ') }) : el('span', { text: t('none') }),
    el('span', { class: 'badge ' + (a.status === '1' ? 'off' : 'on'), text: a.status === '1' ? t('disabled') : t('enabled') }),
    el('span', { attrs: { translate: 'no' } }, (a.tool_names || []).map((n) => link(['access', n], n)).flatMap((c, i) => (i ? [', ', c] : [c])))]))));
}
