// The administrator's agents page (#/agents): the agents, each with the
// enabled tools its selection picks now, and Delete, which asks first.
'use strict';

addStrings({
  en: {
    agents: 'Agents', agents_purpose: 'Named selections of tools with the permissions they need: a run or an MCP session asks for one. Write them with the API or `blindexec agent add`.',
    agent_tools: 'Tools now', empty_agents: 'No agent yet.',
    del_agent: 'Delete the agent “{name}”? Runs and MCP sessions that ask for it are refused from then on; its {count} tools stay in the catalog.',
  },
  'zh-CN': {
    agents: '智能体', agents_purpose: '带所需权限的具名工具集合：运行或 MCP 会话按名称使用。用 API 或 `blindexec agent add` 编写。',
    agent_tools: '当前工具', empty_agents: '还没有智能体。',
    del_agent: '删除智能体“{name}”？此后请求它的运行和 MCP 会话都会被拒绝；它的 {count} 个工具仍留在插件目录中。',
  },
});

async function pageAgents(page) {
  heading(page, t('agents'), t('agents_purpose'));
  const msg = el('div');
  const r = await call('GET', '/v1/agents');
  if (!r.ok) return page.append(errorBox(r));
  const agents = r.data.agents || [];
  if (!agents.length) return page.append(el('p', { class: 'empty', text: t('empty_agents') }));
  page.append(msg, el('div', { attrs: { id: 'agents' } }, table([t('name'), t('description'), t('agent_tools'), t('status'), t('actions')], agents.map((a) => {
    const tools = a.tool_names || [];
    return [el('code', { text: a.name }), el('span', { attrs: { translate: 'no' }, text: plainText(a.description) }),
      el('span', { attrs: { translate: 'no' }, text: tools.length.toLocaleString(lang) + (tools.length ? ' — ' + tools.slice(0, 5).join(', ') + (tools.length > 5 ? ' ' + fill('more_tools', { n: tools.length - 5 }) : '') : '') }),
      el('span', { class: 'badge ' + (a.status === '1' ? 'off' : 'on'), text: a.status === '1' ? t('disabled') : t('enabled') }),
      el('button', { class: 'danger', text: t('delete'), on: { click: () => askFirst(fill('del_agent', { name: a.name, count: String(tools.length) }), t('delete'), async () => {
        const x = await call('DELETE', '/v1/agents/' + encodeURIComponent(a.name));
        if (x.ok) route(); else msg.replaceChildren(errorBox(x));
      }) } })];
  }))));
}

registerPage('agents', pageAgents, { admin: true, nav: 'agents' });
