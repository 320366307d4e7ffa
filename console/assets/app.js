// The blindexec console: plain DOM, no build step. Every text that comes
// from the engine (names, descriptions, responses: written by whoever wrote
// an imported spec or answers as an upstream) goes in through textContent
// or a text node, never as markup.
'use strict';

const I18N = {
  en: {
    sign_in: 'Sign in', sign_out: 'Sign out', token: 'Token', signin_title: 'Sign in',
    signin_purpose: 'Paste the admin token or a per-user token (bx_…). It is checked once; the browser then keeps a session cookie, never the token.',
    token_required: 'token: paste a token to sign in.', token_invalid: 'token: this token is not valid (revoked, expired or mistyped).',
    signin_database_unavailable: 'The database is not answering at the moment, so the token cannot be checked; try again shortly.',
    catalog: 'Catalog', catalog_purpose: 'Every plugin the engine can execute: find one with tool search, enable or disable it in place.',
    tools: 'Tools', tools_purpose: 'The tools as the LLM sees them for you: name, description and parameters.',
    plugin_purpose: 'What the LLM sees, how the engine calls it and which credentials it reads; edit and save with the same checks as the API.',
    try_at_once: 'As an administrator, Try it runs at once, a consequential tool\'s call too, whichever user it runs as: the wait for approval applies to a user\'s own token and to runs, not to the administrator.',
    mcp_more: 'This form registers a server by name, URL and transport only. A server that needs headers or an auth_config (a key per user, OAuth client credentials, a stored token) is registered with the CLI or the API:',
    try: 'Try it', try_purpose: 'Fill in the arguments and run the plugin blind as a user: the engine adds the stored credentials.',
    import: 'Import', import_purpose: 'Import an OpenAPI document: a dry run shows what would change before anything is written.',
    mcp: 'MCP servers', mcp_purpose: 'Register MCP servers, list their tools and import them as plugins.',
    credentials: 'Credentials', credentials_purpose: 'Set, replace or delete a user\'s credentials. Values are write-only: the console only ever shows that a key is set, and when.',
    activity: 'Activity', activity_purpose: 'The execution log with filters, calls and latency per plugin, and the administrative changes.',
    run: 'Run',
    search: 'Search', search_ph: 'What should the tool do?', name: 'Name', description: 'Description', source: 'Source', status: 'Status',
    last_call: 'Last call', actions: 'Actions', enabled: 'enabled', disabled: 'disabled', enable: 'Enable', disable: 'Disable',
    never: 'never', open: 'Open', empty_catalog: 'No plugins yet. Import an OpenAPI document or register an MCP server to add some.',
    empty_search: 'No enabled tool matches. Try other words, or clear the search to see every plugin.',
    empty_tools: 'No tools are enabled yet. Ask your administrator to enable some.',
    parameters: 'Parameters', as_json: 'As JSON', execution: 'Execution', auth: 'Authentication (credential names)', edit: 'Edit',
    save: 'Save', saved: 'Saved.', bad_json: 'This is not JSON: nothing was saved. Where the browser stopped reading:', no_params: 'This tool takes no parameters.', required: 'required',
    user_id: 'User id', run_as: 'Run as user', run_btn: 'Run', request_sent: 'Request sent to the engine', envelope: 'Envelope',
    sent_upstream: 'Request sent to the API (credentials masked)', headers: 'Headers', body: 'Body', credential: 'credential',
    body_cut: '…cut: only the first 16 KiB is shown.', no_body: 'No body.',
    hidden_char: 'A character a browser draws as nothing, or that reorders the text around it: shown by its code point, sent as it is.',
    response: 'Response', add_item: 'Add item', remove: 'Remove', choose: '(choose)',
    paste: 'Paste the document (JSON or YAML)', upload: 'Or upload a file', url: 'Or fetch from a URL', prefix: 'Name prefix', base_url: 'Base URL',
    p_fetched: 'Document read: {total} bytes.', p_parsed: 'Document parsed.', p_converting: 'Converting operations: {done} of {total}',
    p_writing: '{done} of {total} written', p_comparing: '{done} of {total} compared',
    dry_run: 'Dry run', apply: 'Apply', applying: 'Importing… large documents take a while.', added: 'Added', changed: 'Changed', removed: 'Removed (to be disabled)',
    failed: 'Failed', unchanged: 'Unchanged', warnings: 'Warnings', mcp_disabled: 'Disabled (the server no longer lists them)',
    mcp_waits: 'Wait for approval (set a tool otherwise on its page)', up_to_date: 'Nothing changed since the last import of this document.',
    import_first: 'Run a dry run first: Apply writes exactly what it showed.', applied: 'Applied.', none: 'none',
    register: 'Register', transport: 'Transport', list_tools: 'Tools', refresh: 'Refresh', import_tools: 'Import tools', delete: 'Delete',
    empty_mcp: 'No MCP server registered. Register one with its URL above.', mcp_off: 'MCP is not enabled on this engine.',
    key: 'Key', value: 'Value', set: 'set', updated: 'Updated', set_btn: 'Set', replace: 'Replace', load: 'Show',
    empty_creds: 'This user has no stored credentials. Set one above: the key a plugin\'s auth config names, and its value.',
    plugin: 'Plugin', run_id: 'Run id', trace_id: 'Trace id', outcome: 'Outcome', since: 'Since', until: 'Until', filter: 'Filter', any: 'any',
    time: 'Time', latency: 'Latency (ms)', http_status: 'HTTP', error: 'Error', calls_chart: 'Calls and average latency per plugin over time',
    empty_activity: 'No executions match. Run a plugin from its Try it page, or widen the filters.',
    audit: 'Administrative changes', who: 'Who', via: 'Via', what: 'What', empty_audit: 'No administrative change recorded yet.',
    quotas: 'Quotas', quotas_purpose: 'Limits on calls per user and tool, and on the model tokens of runs; a user\'s use of each, and when it resets.',
    rule_name: 'Rule', applies_to: 'Applies to', limit: 'Limit', used: 'Used', resets_at: 'Resets at', every_user: 'each user',
    all_tools: 'all tools', plugins_sel: 'tools (names)', tags_sel: 'tagged', consequential_sel: 'consequential tools', runs_sel: 'run tokens a day',
    window: 'Window', add_rule: 'Add rule', empty_rules: 'No quota rule: calls are limited only by what is in flight.', show_use: 'Show use', empty_use: 'No rule applies to this user.',
    loading: 'Loading…', forbidden: 'This page is the administrator\'s.', calls: 'calls', avg: 'avg',
    type: 'Type', all_sources: 'All sources', by_hand: 'Added by hand', any_status: 'Any status', any_type: 'Any type', any_class: 'Consequential or not', not_consequential: 'Not consequential',
    per_page: 'Per page', range: '{from}–{to} of {total}', page_of: 'Page {page} of {pages}',
    first: 'First', prev: 'Previous', next: 'Next', last: 'Last', pages: 'Pages',
    empty_filter: 'No plugin matches these filters. Clear them to see the whole catalog.',
    approvals: 'Approvals', approvals_purpose: 'Calls that change something on a user\'s behalf wait here for that user: read exactly what will be sent, then approve or deny it. Nothing is sent before.',
    empty_approvals: 'Nothing waits for a decision.', more: 'More', approve: 'Approve', deny: 'Deny', reason: 'Reason (optional)',
    expires: 'Expires', arguments: 'Arguments', from_run: 'Run', decided: 'Decided: {outcome}.',
    invisible_removed: 'Invisible characters removed.', invisible_badge: 'text cleaned',
    left_out: 'Left out of the catalog.', left_out_badge: 'left out',
    left_out_purpose: 'This row breaks the plugin protocol, so no model is shown it and no call sends it until it is fixed (edit it below, or where it was written). Why:',
    invisible_purpose: 'The source of this plugin held characters a person does not see and a model reads (tag characters, bidi controls, zero-width characters, stray variation selectors); they were removed, and this page shows what the model reads. Removed, by field: count (kinds):',
    consequential: 'Consequential', consequential_purpose: 'Whether a call changes something on the user\'s behalf and waits for the user\'s approval. Kept across re-imports.',
    cons_derived: 'Derived (from the method or the import)', cons_yes: 'Yes: waits for approval', cons_no: 'No: runs at once',
    connections: 'Connections', connections_purpose: 'Accounts connected at OAuth providers: tools of those providers act in them on the user\'s behalf. Connecting opens the provider\'s sign-in; the engine keeps the tokens, never shows them.',
    connections_admin_purpose: 'Who is connected to what: every user\'s accounts at the OAuth providers (never a token). A user connects from their own session.',
    provider: 'Provider', account: 'Account', scopes: 'Scopes', expires_at: 'Token expires', state: 'State', connected_at: 'Connected',
    connect: 'Connect', reconnect: 'Reconnect', disconnect: 'Disconnect', connect_to: 'Connect an account at', all_users: 'all users',
    empty_connections: 'No connected account.', empty_providers: 'No OAuth provider is enabled: the administrator registers one first.',
    state_connected: 'connected', state_broken: 'broken: reconnect', needs_account: 'waits for an account at {provider}',
    connect_then: 'Connect the account, then continue: the call is made then. Cancel tells the assistant the account was not connected.',
    continue_btn: 'Continue', cancel_btn: 'Cancel', missing_scopes: 'Missing scopes',
    providers: 'OAuth providers', providers_purpose: 'The authorization servers users connect accounts at. Register the engine as a client there with the redirect URI below, then enter the client here. The client secret is stored encrypted and never shown again.',
    redirect_uri: 'Redirect URI to register at each provider', no_browser_url: 'BLINDEXEC_BROWSER_URL is not set: users cannot connect until it is.',
    authorization_url: 'Authorization URL', token_url: 'Token URL', revocation_url: 'Revocation URL', issuer: 'Issuer',
    client_id: 'Client id', client_secret: 'Client secret', secret_kept: '(stored: leave empty to keep it)', pkce: 'PKCE (S256)',
    iss_supported: 'Always sends iss: tick when its metadata (/.well-known/oauth-authorization-server or /.well-known/openid-configuration) says authorization_response_iss_parameter_supported: true; needs the Issuer; an answer without iss is then refused',
    provider_enabled: 'Enabled', save_provider: 'Save provider', empty_provider_list: 'No provider registered.', secret_set: 'secret stored', no_secret: 'no secret',
    cancel: 'Cancel', confirm_title: 'Are you sure?',
    del_credential: 'Delete the credential “{key}” of user {user}? It cannot be shown again; the tools that read it ({tools}) answer “missing credentials” until it is set again.',
    del_rule: 'Delete the quota rule “{name}”? Its use so far goes with it, and the calls it limited are no longer limited by it.',
    del_provider: 'Delete the OAuth provider “{name}”? Every user\'s connection to it goes with it ({count} now), its tokens revoked at the provider; users must connect again once it is registered again.',
    del_mcp: 'Remove the MCP server “{name}”? The plugins that call it are disabled with it.',
    del_plugin: 'Delete the plugin “{name}”? It is no longer offered to the model; agents and quota rules naming it no longer find it. Its execution log stays.',
    del_connection: 'Disconnect user {user} from {provider}? The tokens are revoked at the provider; tools using the account wait until the user connects again.',
    no_tools_read: 'none enabled now',
    needed_keys: 'Keys the user\'s tools need', needed_purpose: 'The credential keys the enabled tools this user may use read. Set the missing ones; the others are set.',
    missing: 'missing', tools_reading: 'Read by', set_empty: 'Set an empty password', may_be_empty: 'a basic-auth password: empty is a value (the user name is then the secret)',
    empty_needed: 'No enabled tool this user may use reads a credential.',
    set_credentials: 'Set the missing credentials', more_tools: '+{n} more',
    audit_more: 'Older changes',
    via_console: 'console', via_api: 'API', via_cli: 'command line', via_mcp: 'MCP client', via_browser: 'browser',
    outcome_ok: 'ok', outcome_error: 'error', outcome_refused: 'refused',
    win_minute: 'a minute', win_hour: 'an hour', win_day: 'a day',
    per_window: '{n} {unit} {window}', unit_calls: 'calls', unit_run_tokens: 'run tokens',
    applies_runs: 'runs (model tokens)', applies_tagged: 'tools tagged {tags}',
    quota_tz: 'Reset times are in the quotas\' time zone (BLINDEXEC_QUOTA_TZ), UTC{offset}; your browser\'s time is in brackets.',
    engine_says: 'The engine says:', url_label: 'URL', datetime_ph: 'YYYY-MM-DD hh:mm', ms: 'ms', max: 'max',
    arguments_legend: 'Arguments', tokens: 'Tokens', add_plugin: 'Add plugin', colon: ': ',
  },
  'zh-CN': {
    sign_in: '登录', sign_out: '退出', token: '令牌', signin_title: '登录',
    signin_purpose: '粘贴管理员令牌或用户令牌（bx_…）。令牌只校验一次，浏览器随后只保存会话 Cookie，不保存令牌。',
    token_required: 'token：请粘贴令牌后登录。', token_invalid: 'token：令牌无效（已吊销、已过期或输入有误）。',
    signin_database_unavailable: '数据库暂时没有响应，无法核对令牌；请稍后再试。',
    catalog: '插件目录', catalog_purpose: '引擎可执行的全部插件：用工具搜索查找，直接启用或停用。',
    tools: '工具', tools_purpose: 'LLM 为你看到的工具：名称、描述和参数。',
    plugin_purpose: 'LLM 看到的内容、引擎的调用方式和读取的凭据名称；编辑并保存，校验与 API 相同。',
    try_at_once: '以管理员身份试运行会立即执行，需确认的工具也是如此，无论以哪个用户身份运行：等待批准只适用于用户自己的令牌和运行，不适用于管理员。',
    mcp_more: '此表单只按名称、URL 和传输方式注册服务。需要 headers 或 auth_config（每个用户的密钥、OAuth 客户端凭据、已存储的令牌）的服务，请使用命令行或 API 注册：',
    try: '试运行', try_purpose: '填写参数，以某个用户的身份盲执行插件：引擎自动填入已存储的凭据。',
    import: '导入', import_purpose: '导入 OpenAPI 文档：先试运行查看差异，确认后才写入。',
    mcp: 'MCP 服务', mcp_purpose: '注册 MCP 服务，查看其工具并导入为插件。',
    credentials: '凭据', credentials_purpose: '设置、替换或删除用户的凭据。凭据值只写不读：控制台只显示某个键已设置及设置时间。',
    activity: '活动', activity_purpose: '执行日志（可筛选）、各插件调用量与延迟，以及管理变更记录。',
    run: '运行',
    search: '搜索', search_ph: '需要工具做什么？', name: '名称', description: '描述', source: '来源', status: '状态',
    last_call: '最近调用', actions: '操作', enabled: '已启用', disabled: '已停用', enable: '启用', disable: '停用',
    never: '从未', open: '打开', empty_catalog: '还没有插件。导入 OpenAPI 文档或注册 MCP 服务来添加。',
    empty_search: '没有匹配的已启用工具。换个说法，或清空搜索查看全部插件。',
    empty_tools: '还没有启用的工具。请联系管理员启用。',
    parameters: '参数', as_json: 'JSON 形式', execution: '执行配置', auth: '认证（凭据名称）', edit: '编辑',
    save: '保存', saved: '已保存。', bad_json: '这不是有效的 JSON：未保存任何内容。浏览器停止读取的位置：', no_params: '该工具没有参数。', required: '必填',
    user_id: '用户 ID', run_as: '以用户身份运行', run_btn: '运行', request_sent: '发送给引擎的请求', envelope: '结果信封',
    sent_upstream: '发送给 API 的请求（凭据已遮蔽）', headers: '请求头', body: '请求体', credential: '凭据',
    body_cut: '……已截断：只显示前 16 KiB。', no_body: '无请求体。',
    hidden_char: '浏览器不显示、或会改变周围文字顺序的字符：此处显示其码位，发送时保持原样。',
    response: '响应', add_item: '添加一项', remove: '移除', choose: '（请选择）',
    paste: '粘贴文档（JSON 或 YAML）', upload: '或上传文件', url: '或从 URL 获取', prefix: '名称前缀', base_url: '基础 URL',
    p_fetched: '已读取文档：{total} 字节。', p_parsed: '已解析文档。', p_converting: '正在转换操作：{done} / {total}',
    p_writing: '已写入 {done} / {total}', p_comparing: '已比较 {done} / {total}',
    dry_run: '试运行', apply: '应用', applying: '正在导入……大文档需要一些时间。', added: '新增', changed: '变更', removed: '移除（将停用）',
    failed: '失败', unchanged: '未变', warnings: '警告', mcp_disabled: '已停用（服务器不再列出）',
    mcp_waits: '等待批准（可在工具页面另行设置）', up_to_date: '该文档自上次导入以来没有变化。',
    import_first: '请先试运行：应用时写入的正是试运行显示的内容。', applied: '已应用。', none: '无',
    register: '注册', transport: '传输方式', list_tools: '工具', refresh: '刷新', import_tools: '导入工具', delete: '删除',
    empty_mcp: '还没有注册 MCP 服务。在上方填写 URL 注册。', mcp_off: '此引擎未启用 MCP。',
    key: '键', value: '值', set: '已设置', updated: '更新时间', set_btn: '设置', replace: '替换', load: '查看',
    empty_creds: '该用户没有存储的凭据。在上方设置：插件认证配置中的键名及其值。',
    plugin: '插件', run_id: '运行 ID', trace_id: '追踪 ID', outcome: '结果', since: '起始', until: '截止', filter: '筛选', any: '全部',
    time: '时间', latency: '延迟（毫秒）', http_status: 'HTTP', error: '错误', calls_chart: '各插件随时间的调用量与平均延迟',
    empty_activity: '没有匹配的执行记录。可在插件的试运行页执行，或放宽筛选条件。',
    audit: '管理变更', who: '操作者', via: '途径', what: '内容', empty_audit: '还没有管理变更记录。',
    quotas: '配额', quotas_purpose: '按用户和工具限制调用次数，限制运行消耗的模型令牌；查看某个用户的用量及重置时间。',
    rule_name: '规则', applies_to: '适用于', limit: '上限', used: '已用', resets_at: '重置时间', every_user: '每个用户',
    all_tools: '所有工具', plugins_sel: '工具（名称）', tags_sel: '标签', consequential_sel: '有后果的工具', runs_sel: '每天运行令牌',
    window: '窗口', add_rule: '添加规则', empty_rules: '没有配额规则：调用只受并发数限制。', show_use: '查看用量', empty_use: '没有适用于该用户的规则。',
    loading: '加载中……', forbidden: '此页面仅限管理员。', calls: '次调用', avg: '平均',
    type: '类型', all_sources: '全部来源', by_hand: '手动添加', any_status: '全部状态', any_type: '全部类型', any_class: '是否需确认', not_consequential: '无需确认',
    per_page: '每页', range: '第 {from}–{to} 条，共 {total} 条', page_of: '第 {page} / {pages} 页',
    first: '首页', prev: '上一页', next: '下一页', last: '末页', pages: '分页',
    empty_filter: '没有符合筛选条件的插件。清除筛选可查看全部插件。',
    approvals: '待审批', approvals_purpose: '代表用户进行更改的调用在此等待该用户决定：先查看将要发送的完整请求，再批准或拒绝。决定之前不会发送任何内容。',
    empty_approvals: '没有等待决定的调用。', more: '更多', approve: '批准', deny: '拒绝', reason: '理由（可选）',
    expires: '过期时间', arguments: '参数', from_run: '运行', decided: '已决定：{outcome}。',
    invisible_removed: '已移除不可见字符。', invisible_badge: '文本已清理',
    left_out: '未载入目录。', left_out_badge: '未载入',
    left_out_purpose: '此行不符合插件协议，修正之前不会展示给模型，也不会发送任何调用（可在下方编辑，或在写入它的地方修改）。原因：',
    invisible_purpose: '此插件的来源包含人看不到而模型会读取的字符（标签字符、双向控制符、零宽字符、多余的变体选择符）；它们已被移除，本页显示的就是模型读取的内容。按字段列出移除的字符：数量（类别）：',
    consequential: '需确认', consequential_purpose: '调用是否代表用户进行更改并等待用户批准。重新导入后保持不变。',
    cons_derived: '自动判断（按方法或导入信息）', cons_yes: '是：等待批准', cons_no: '否：直接执行',
    connections: '账号连接', connections_purpose: '在 OAuth 提供方连接的账号：这些提供方的工具以用户身份在其中操作。连接时打开提供方的登录页；令牌由引擎保存，从不显示。',
    connections_admin_purpose: '谁连接了什么：每个用户在各 OAuth 提供方的账号（从不显示令牌）。用户在自己的会话中连接。',
    provider: '提供方', account: '账号', scopes: '权限范围', expires_at: '令牌过期', state: '状态', connected_at: '连接时间',
    connect: '连接', reconnect: '重新连接', disconnect: '断开', connect_to: '连接账号：', all_users: '所有用户',
    empty_connections: '没有已连接的账号。', empty_providers: '没有启用的 OAuth 提供方：请管理员先注册。',
    state_connected: '已连接', state_broken: '已失效：请重新连接', needs_account: '等待连接 {provider} 账号',
    connect_then: '先连接账号，再点继续：调用随后执行。点取消则告诉助手账号未连接。',
    continue_btn: '继续', cancel_btn: '取消', missing_scopes: '缺少的权限范围',
    providers: 'OAuth 提供方', providers_purpose: '用户连接账号所用的授权服务器。先在提供方处把引擎注册为客户端（使用下方的回调地址），再在此填写客户端信息。客户端密钥加密保存，不再显示。',
    redirect_uri: '在提供方处注册的回调地址', no_browser_url: '未设置 BLINDEXEC_BROWSER_URL：设置前用户无法连接账号。',
    authorization_url: '授权地址', token_url: '令牌地址', revocation_url: '吊销地址', issuer: '签发者',
    client_id: '客户端 ID', client_secret: '客户端密钥', secret_kept: '（已保存：留空则保留）', pkce: 'PKCE（S256）',
    iss_supported: '总会发送 iss：其元数据（/.well-known/oauth-authorization-server 或 /.well-known/openid-configuration）中 authorization_response_iss_parameter_supported 为 true 时勾选；须填写签发者；勾选后没有 iss 的应答会被拒绝',
    provider_enabled: '启用', save_provider: '保存提供方', empty_provider_list: '尚未注册提供方。', secret_set: '已保存密钥', no_secret: '无密钥',
    cancel: '取消', confirm_title: '确定吗？',
    del_credential: '删除用户 {user} 的凭据“{key}”？删除后无法再查看；读取它的工具（{tools}）在重新设置之前都会返回“缺少凭据”。',
    del_rule: '删除配额规则“{name}”？已有的用量随之删除，它限制的调用不再受它限制。',
    del_provider: '删除 OAuth 提供方“{name}”？所有用户与它的连接随之删除（当前 {count} 个），令牌在提供方处吊销；重新注册后用户需要重新连接。',
    del_mcp: '移除 MCP 服务“{name}”？调用它的插件随之停用。',
    del_plugin: '删除插件“{name}”？模型将不再看到它；引用它的智能体和配额规则将找不到它。执行日志保留。',
    del_connection: '断开用户 {user} 与 {provider} 的连接？令牌将在提供方处吊销；使用该账号的工具要等用户重新连接。',
    no_tools_read: '当前没有启用的工具',
    needed_keys: '该用户的工具需要的键', needed_purpose: '该用户可用的已启用工具读取的凭据键。请设置缺少的键，其余已设置。',
    missing: '缺少', tools_reading: '读取它的工具', set_empty: '设为空密码', may_be_empty: 'Basic 认证密码：空值也有效（此时用户名即为密钥）',
    empty_needed: '该用户可用的已启用工具都不读取凭据。',
    set_credentials: '设置缺少的凭据', more_tools: '另有 {n} 个',
    audit_more: '更早的变更',
    via_console: '控制台', via_api: 'API', via_cli: '命令行', via_mcp: 'MCP 客户端', via_browser: '浏览器',
    outcome_ok: '成功', outcome_error: '出错', outcome_refused: '被拒绝',
    win_minute: '每分钟', win_hour: '每小时', win_day: '每天',
    per_window: '{window} {n} {unit}', unit_calls: '次调用', unit_run_tokens: '个运行令牌',
    applies_runs: '运行（模型令牌）', applies_tagged: '带标签 {tags} 的工具',
    quota_tz: '重置时间按配额时区（BLINDEXEC_QUOTA_TZ）显示，即 UTC{offset}；括号内为浏览器所在时区的时间。',
    engine_says: '引擎返回：', url_label: 'URL', datetime_ph: '年-月-日 时:分', ms: '毫秒', max: '最大',
    arguments_legend: '参数', tokens: '令牌', add_plugin: '添加插件', colon: '：',
  },
};

// addStrings adds a page's strings, registered from the page's own file:
// every key in both languages (the browser test fails on one missing).
// One table holds every file's keys, so a key another file already says
// otherwise would change that file's page: clashes keeps them for the
// browser test.
const clashes = [];
function addStrings(tables) {
  for (const [l, strings] of Object.entries(tables)) {
    const into = I18N[l] || (I18N[l] = {});
    for (const [k, v] of Object.entries(strings)) {
      if (k in into && into[k] !== v) clashes.push(l + ':' + k);
      into[k] = v;
    }
  }
}

// Pages kept in files of their own (runs.js, playground.js, …), loaded
// before this one, push {strings: {en, 'zh-CN'}, pages: {name: fn(page,
// parts, rest)}, nav: [[route, key, 'admin' | 'user' | 'both']]} onto
// window.BLINDEXEC_PAGES: their strings join the table, their pages the
// routes, their links the menu.
const EXTRA = window.BLINDEXEC_PAGES || [];
for (const x of EXTRA) addStrings(x.strings || {});

let lang = localStorage.getItem('blindexec.lang') ||
  ((navigator.languages || [navigator.language]).some((l) => /^zh/i.test(l)) ? 'zh-CN' : 'en');
// untranslated collects the keys a page asked for that the language
// lacks: the browser test reads it on every page, in both languages.
const untranslated = new Set();
const t = (k) => {
  const v = I18N[lang] && I18N[lang][k];
  if (v === undefined) untranslated.add(lang + ':' + k);
  return v || I18N.en[k] || k;
};

let session = null; // {role, user_id, csrf}

// el builds an element: props.class, props.text, props.attrs (plain
// attributes), props.on (listeners); children are nodes or strings (text).
function el(tag, props, ...kids) {
  const n = document.createElement(tag);
  const p = props || {};
  if (p.class) n.className = p.class;
  if (p.text !== undefined && p.text !== null) n.textContent = String(p.text);
  for (const [k, v] of Object.entries(p.attrs || {})) {
    if (v !== undefined && v !== null && v !== false) n.setAttribute(k, v === true ? '' : String(v));
  }
  for (const [k, v] of Object.entries(p.on || {})) n.addEventListener(k, v);
  for (const c of kids.flat()) {
    if (c === null || c === undefined || c === false) continue;
    n.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return n;
}

// byName is an object to index data by a name, an id or a key the engine
// or an upstream chose: without a prototype, so that a plugin named
// constructor, __proto__ or toString is a key like any other, never one
// of Object's own properties (a chart that found Object's constructor
// for such a name threw, and the Activity page showed nothing).
const byName = () => Object.create(null);

// asData marks a node as the engine's data (a name, a description, what an
// upstream wrote): never translated, by a browser's translator or by the
// translation test.
const asData = (node) => { node.setAttribute('translate', 'no'); return node; };

// link is an in-console link: the href is built here, never taken from data.
// kids (nodes or strings) stand for the text when given.
const link = (route, text, ...kids) => el('a', { attrs: { href: '#/' + route.map(encodeURIComponent).join('/') }, text: kids.length ? null : text }, ...kids);

// breakable is a name as text nodes with a <wbr> after each _ - . or / and
// between a lower-case letter or digit and an upper-case one: a narrow
// column wraps a name only there, never inside one of its words.
const breakable = (name) => String(name).split(/(?<=[_\-./])|(?<=[a-z0-9])(?=[A-Z])/)
  .flatMap((part, i) => (i ? [el('wbr'), part] : [part]));

// Entities a description may hold, beyond the numeric ones.
const ENTITIES = Object.assign(byName(), { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: '\u00a0', mdash: '—', ndash: '–', hellip: '…' });
// Tags that end a block of text: they become a space, the others nothing.
const BLOCK = /^\/?(p|br|div|li|ul|ol|h[1-6]|tr|td|th|table|pre|blockquote|hr|dt|dd)\b/i;

// plainText is a description as text: imports store what the document
// wrote, and Stripe's (among others) are HTML. Comments, scripts, styles
// and tags are dropped, entities decoded, white space collapsed. A string
// scan, never a parser of markup: the result goes in as text.
function plainText(s) {
  if (!s) return '';
  return String(s)
    .replace(/<!--[\s\S]*?(-->|$)/g, ' ')
    .replace(/<(script|style)\b[\s\S]*?(<\/\1\s*>|$)/gi, ' ')
    .replace(/<\/?[a-z][^>]*(>|$)/gi, (tag) => (BLOCK.test(tag.slice(1)) ? ' ' : ''))
    .replace(/&(#x[0-9a-f]+|#[0-9]+|[a-z]+);/gi, (m, e) => {
      if (e[0] !== '#') return ENTITIES[e.toLowerCase()] ?? m;
      const n = e[1] === 'x' || e[1] === 'X' ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10);
      return n > 0 && n <= 0x10ffff ? String.fromCodePoint(n) : m;
    })
    .replace(/\s+/g, ' ').trim();
}

// HIDDEN are the characters a browser draws as nothing or that reorder
// the text around them (internal/invisible's classes: bidi controls,
// zero-width and other default-ignorable characters, tag characters,
// controls, a variation selector after another): on a page that shows
// what will be sent (a request waiting for approval, a record's
// arguments) or what an upstream asks, such a text would read as another
// than the one sent. A joiner and a single variation selector stay:
// emoji and scripts draw with them.
const HIDDEN = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F\u00AD\u034F\u061C\u115F\u1160\u17B4\u17B5\u180B-\u180F\u200B\u200E\u200F\u202A-\u202E\u2060-\u206F\u3164\uFEFF\uFFA0\uFFF9-\uFFFB\u{1BCA0}-\u{1BCA3}\u{1D173}-\u{1D17A}\u{E0000}-\u{E0FFF}]|(?<=[\uFE00-\uFE0F])[\uFE00-\uFE0F]/gu;

// revealed is s as nodes for el: each hidden character a marked code
// point ("U+202E"), the rest text, so the person reads what is sent.
function revealed(s) {
  const str = String(s ?? '');
  const out = [];
  let at = 0;
  for (const m of str.matchAll(HIDDEN)) {
    if (m.index > at) out.push(str.slice(at, m.index));
    out.push(el('span', { class: 'hidden-char', text: 'U+' + m[0].codePointAt(0).toString(16).toUpperCase().padStart(4, '0'), attrs: { title: t('hidden_char'), translate: 'no' } }));
    at = m.index + m[0].length;
  }
  if (at < str.length) out.push(str.slice(at));
  return out;
}

function fetchOptions(method, body) {
  // The engine answers in the console's language where it speaks (the
  // administrators' log, the OAuth pages).
  const opts = { method, credentials: 'same-origin', headers: { 'Accept-Language': lang } };
  if (method !== 'GET') opts.headers['X-CSRF-Token'] = session && session.csrf;
  if (body !== undefined) {
    opts.headers['Content-Type'] = 'application/json';
    opts.body = JSON.stringify(body);
  }
  return opts;
}

async function answer(r, path) {
  let data = null;
  const text = await r.text();
  try { data = text ? JSON.parse(text) : null; } catch { data = { error: { message: text } }; }
  if (r.status === 401 && path !== '/console/api/session') { location.reload(); }
  return { status: r.status, ok: r.ok, data };
}

async function call(method, path, body) {
  return answer(await fetch(path, fetchOptions(method, body)), path);
}

// callStream is call for a route that streams its progress as NDJSON
// (an import): onProgress gets each progress line ({phase, done, total});
// the answer is the last line, the object the route answers without
// streaming. A route that answers before streaming (a malformed request)
// answers as call.
async function callStream(method, path, body, onProgress) {
  const opts = fetchOptions(method, body);
  opts.headers.Accept = 'application/x-ndjson';
  const r = await fetch(path, opts);
  if (!/^application\/x-ndjson/.test(r.headers.get('Content-Type') || '')) return answer(r, path);
  const reader = r.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  let last = null;
  const line = (l) => {
    if (!l.trim()) return;
    const v = JSON.parse(l);
    if (v && v.phase !== undefined) onProgress(v); else last = v;
  };
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += value;
      for (let i; (i = buf.indexOf('\n')) >= 0; buf = buf.slice(i + 1)) line(buf.slice(0, i));
    }
    line(buf);
  } catch (e) {
    last = { error: { message: String(e) } };
  }
  if (!last) last = { error: { message: 'HTTP ' + r.status } };
  return { status: r.status, ok: r.ok && !last.error, data: last };
}

// errorBox names what went wrong: the error code's sentence in the
// console's language, then the engine's own words (English, the detail,
// never translated: translate="no"), field by field when it says which.
function errorBox(res) {
  const e = (res.data && res.data.error) || { message: 'HTTP ' + res.status };
  const box = el('div', { class: 'error', attrs: { role: 'alert', 'data-code': e.code || null } }, errorSentence(e.code, res.status));
  if (e.message) box.append(' ', el('span', { class: 'detail', attrs: { translate: 'no' }, text: t('engine_says') + ' ' + e.message }));
  const fields = e.details && e.details.fields;
  if (Array.isArray(fields)) {
    box.append(el('ul', null, fields.map((f) => el('li', { attrs: { translate: 'no' } }, el('strong', { text: f.field + ': ' }), f.message))));
  }
  return box;
}

// errorSentence says an error code in words (err_<code>, errors.js), or
// the HTTP status's when the engine named none.
function errorSentence(code, status) {
  if (code && I18N.en['err_' + code]) return t('err_' + code);
  return fill('err_http', { status: String(status || '') });
}

// errorText is errorBox in one line, for an error read out of an answer
// (a run's, a decision's): the code's sentence, then the engine's words.
function errorText(e, status) {
  return errorSentence(e.code, status) + (e.message ? ' ' + t('engine_says') + ' ' + e.message : '');
}

// askFirst asks once before a destructive action: a modal dialog saying
// what goes with it; run happens only on its confirmation.
function askFirst(text, label, run) {
  const yes = el('button', { class: 'danger confirm-yes', text: label });
  const no = el('button', { class: 'secondary confirm-no', text: t('cancel'), attrs: { type: 'button' } });
  const dialog = el('dialog', { class: 'confirm', attrs: { 'aria-label': t('confirm_title') } },
    el('h2', { text: t('confirm_title') }), el('p', { class: 'confirm-text', text }), el('div', { class: 'row' }, yes, no));
  const close = () => { dialog.close(); dialog.remove(); };
  no.addEventListener('click', close);
  dialog.addEventListener('cancel', close);
  yes.addEventListener('click', async () => { close(); await run(); });
  document.body.append(dialog);
  dialog.showModal();
  yes.focus();
}

const json = (v) => el('pre', null, revealed(JSON.stringify(v, null, 2)));
const fmtTime = (s) => (s ? new Date(s).toLocaleString(lang) : t('never'));
const fmtShort = (s) => (s ? new Date(s).toLocaleString(lang, { dateStyle: 'short', timeStyle: 'short' }) : t('never'));
// One pass, each value as text: a value's `$&` is no pattern, and its
// `{name}` no placeholder (review 74b).
const fill = (key, vars) => t(key).replace(/\{(\w+)\}/g, (m, k) => (Object.hasOwn(vars, k) ? String(vars[k]) : m));
// zoneOffset is the UTC offset an RFC 3339 time was written in ("+08:00").
const zoneOffset = (s) => { const m = /([+-]\d\d:\d\d|Z)$/.exec(String(s || '')); return m ? (m[1] === 'Z' ? '+00:00' : m[1]) : ''; };
// fmtInZone shows an RFC 3339 time in the zone it was written in (the
// quotas' BLINDEXEC_QUOTA_TZ), the browser's time beside it.
function fmtInZone(s) {
  if (!s) return t('never');
  const off = zoneOffset(s);
  const [h, m] = off.slice(1).split(':').map(Number);
  const shifted = new Date(Date.parse(s) + (off[0] === '-' ? -1 : 1) * (h * 60 + m) * 60000);
  return shifted.toLocaleString(lang, { timeZone: 'UTC', dateStyle: 'medium', timeStyle: 'short' }) + ' (' + fmtShort(s) + ')';
}
const isAdmin = () => session && session.role === 'admin';

function heading(page, title, purpose) {
  page.append(el('h1', { text: title }), el('p', { class: 'purpose', text: purpose }));
}

// table builds a table; a header given as [text, class] sets its
// column's class (on the th and every td), and each td carries its
// header as data-label for the phone layout.
function table(headers, rows, cls) {
  const cols = headers.map((h) => (Array.isArray(h) ? h : [h, null]));
  return el('div', { class: 'table-wrap' },
    el('table', { class: cls }, el('thead', null, el('tr', null, cols.map(([h, c]) => el('th', { class: c, text: h })))),
      el('tbody', null, rows.map((r) => el('tr', null, r.map((v, i) => el('td', { class: cols[i][1], attrs: { 'data-label': cols[i][0] } }, v)))))));
}

// --- pages ---

// PAGE_SIZES are the catalog's page sizes; the choice is remembered.
const PAGE_SIZES = ['50', '100'];

// catalogQuery reads the catalog's state from the route: q, source,
// status, type, size and page (an older #/catalog/words is a search).
function catalogQuery(raw) {
  const q = new URLSearchParams(raw.includes('=') ? raw : raw ? 'q=' + raw : '');
  let size = q.get('size') || localStorage.getItem('blindexec.pageSize');
  if (!PAGE_SIZES.includes(size)) size = PAGE_SIZES[0];
  q.set('size', size);
  const page = Number(q.get('page'));
  q.set('page', String(Number.isInteger(page) && page > 0 ? page : 1));
  return q;
}

// sourceLabel names an import source in a few words: an MCP server's
// name, a document's title, or a URL's file name.
function sourceLabel(s) {
  if (s.server_name) return t('mcp') + ' ' + s.server_name;
  const loc = String(s.location || '').replace(/^inline:/, '');
  const url = /^https?:\/\/[^/]+\/(?:.*\/)?([^/?#]+)/.exec(loc);
  return url ? url[1] : loc;
}

// pager says which rows of how many the page shows and moves among the
// pages; go(n) opens page n.
function pager(total, page, size, go) {
  const pages = Math.max(1, Math.ceil(total / size));
  const from = total ? (page - 1) * size + 1 : 0, to = Math.min(total, page * size);
  const num = (n) => n.toLocaleString(lang);
  const btn = (key, n, label) => el('button', { class: 'secondary', text: label, attrs: { type: 'button', disabled: n < 1 || n > pages || n === page, 'aria-label': t(key), title: t(key) },
    on: { click: () => go(n) } });
  return el('nav', { class: 'pager', attrs: { 'aria-label': t('pages') } },
    el('span', { class: 'range', text: fill('range', { from: num(from), to: num(to), total: num(total) }) }),
    el('span', { class: 'moves' }, btn('first', 1, '«'), btn('prev', page - 1, '‹ ' + t('prev')),
      el('span', { class: 'where', text: fill('page_of', { page: num(page), pages: num(pages) }) }),
      btn('next', page + 1, t('next') + ' ›'), btn('last', pages, '»')));
}

async function pageCatalog(page, raw) {
  heading(page, t('catalog'), t('catalog_purpose'));
  const q = catalogQuery(raw);
  const size = Number(q.get('size')), pageNo = Number(q.get('page'));
  const go = (changes) => {
    const n = new URLSearchParams(q);
    for (const [k, v] of Object.entries(changes)) if (v) n.set(k, v); else n.delete(k);
    if (!('page' in changes)) n.delete('page'); // a new filter starts at its first page
    if (n.get('page') === '1') n.delete('page');
    location.hash = '#/catalog/' + n.toString();
  };
  const input = el('input', { attrs: { type: 'search', id: 'search', value: q.get('q') || '', placeholder: t('search_ph'), 'aria-label': t('search') } });
  const select = (id, key, options) => el('select', { attrs: { id, 'aria-label': t(key) }, on: { change: (e) => go({ [id.replace('f-', '')]: e.target.value }) } },
    options.map(([v, text]) => el('option', { attrs: { value: v, selected: (q.get(id.replace('f-', '')) || '') === v }, text })));
  const sourcesSel = select('f-source', 'source', [['', t('all_sources')], ['none', t('by_hand')]]);
  const filters = el('form', { class: 'row filters', on: { submit: (e) => { e.preventDefault(); go({ q: input.value.trim() }); } } },
    el('span', { class: 'search' }, input, el('button', { text: t('search') })),
    sourcesSel,
    select('f-status', 'status', [['', t('any_status')], ['0', t('enabled')], ['1', t('disabled')]]),
    select('f-type', 'type', [['', t('any_type')], ['http', 'HTTP'], ['mcp', 'MCP']]),
    select('f-consequential', 'consequential', [['', t('any_class')], ['true', t('consequential')], ['false', t('not_consequential')]]),
    el('label', { class: 'inline' }, t('per_page'), el('select', { attrs: { id: 'f-size' }, on: { change: (e) => {
      localStorage.setItem('blindexec.pageSize', e.target.value);
      go({ size: e.target.value });
    } } }, PAGE_SIZES.map((v) => el('option', { attrs: { value: v, selected: String(size) === v }, text: v })))));
  page.append(filters);
  const api = new URLSearchParams({ limit: String(size), offset: String((pageNo - 1) * size) });
  for (const k of ['q', 'source', 'status', 'type', 'consequential']) if (q.get(k)) api.set(k, q.get(k));
  const [pl, src] = await Promise.all([call('GET', '/v1/plugins?' + api.toString()), call('GET', '/v1/sources')]);
  if (!pl.ok) return page.append(errorBox(pl));
  const sources = {};
  for (const s of (src.ok && src.data.sources) || []) {
    sources[s.source_id] = s;
    sourcesSel.append(el('option', { attrs: { value: String(s.source_id), selected: q.get('source') === String(s.source_id) },
      text: sourceLabel(s) + ' (' + s.plugins.toLocaleString(lang) + ')' }));
  }
  const list = pl.data.plugins || [], total = pl.data.total || 0;
  const nav = () => pager(total, pageNo, size, (n) => go({ page: String(n) }));
  if (!list.length && total) return go({ page: String(Math.ceil(total / size)) }); // past the last page: to the last
  if (!list.length) {
    if (q.get('q')) return page.append(el('p', { class: 'empty', text: t('empty_search') }));
    if (q.get('source') || q.get('status') || q.get('type') || q.get('consequential') || pageNo > 1) return page.append(el('p', { class: 'empty', text: t('empty_filter') }));
    return page.append(el('p', { class: 'empty' }, t('empty_catalog') + ' ', link(['import'], t('import')), ' · ', link(['mcp'], t('mcp'))));
  }
  page.append(nav(), table([[t('name'), 'name'], [t('description'), 'desc'], [t('source'), 'source'], [t('status'), 'status'],
    [t('last_call'), 'when'], [t('actions'), 'actions']], list.map((p) => {
    const on = p.status !== '1';
    const toggle = el('button', { class: 'secondary', text: on ? t('disable') : t('enable'), on: { click: async () => {
      const r = await call('PATCH', '/v1/plugins/' + encodeURIComponent(p.name), { status: on ? '1' : '0' });
      if (r.ok) route(); else toggle.after(errorBox(r));
    } } });
    const type = (p.execution && p.execution.type) || 'http';
    const from = p.source_id ? sources[p.source_id] : null;
    // The description, less the title it often starts with (an
    // operation's summary, then its description).
    const title = plainText(p.title), full = plainText(p.description);
    let text = title && full.startsWith(title) ? full.slice(title.length).trim() : full;
    // What is left of a description that was its title and a full stop
    // (or a dash) says nothing: no "— ." after the title.
    if (title && !/[\p{L}\p{N}]/u.test(text)) text = '';
    return [asData(link(['plugin', p.name], null, ...breakable(p.name))),
      el('div', { class: 'clamp', attrs: { title: full, translate: 'no' } }, title ? el('strong', { text: title }) : null, title && text ? ' — ' : null, text),
      el('span', null, el('span', { class: 'badge', text: type.toUpperCase() }), ' ',
        el('span', { class: 'from', text: from ? sourceLabel(from) : p.source_id ? '#' + p.source_id : t('by_hand'), attrs: { title: from ? from.location : null, translate: from ? 'no' : null } })),
      el('span', null, el('span', { class: 'badge ' + (on ? 'on' : 'off'), text: on ? t('enabled') : t('disabled') }),
        p.invisible_removed ? el('span', { class: 'badge warn', text: t('invisible_badge'), attrs: { title: t('invisible_purpose') } }) : null,
        // Enabled or not, a row breaking the protocol is served to nobody.
        p.load_error ? el('span', { class: 'badge off left-out', text: t('left_out_badge') }) : null,
        p.load_error ? el('div', { class: 'left-out-why', text: p.load_error, attrs: { translate: 'no' } }) : null),
      el('span', { text: fmtShort(p.last_call_time), attrs: { title: p.last_call_time ? fmtTime(p.last_call_time) : null } }),
      el('span', null, toggle, ' ', link(['try', p.name], t('try')))];
  }), 'catalog'), nav());
  // The first page is interactive: the browser test reads this mark.
  performance.mark('catalog-ready');
}

// TOOLS_PAGE is the tools of a page: the most a search answers at once.
const TOOLS_PAGE = 50;

// pageTools shows a page of the tools the LLM sees, by name, or with a
// search the best first: never the whole catalog at once.
async function pageTools(page, raw) {
  heading(page, t('tools'), t('tools_purpose'));
  const q = new URLSearchParams(raw);
  const pageNo = Math.max(1, Number.parseInt(q.get('page'), 10) || 1);
  const go = (changes) => {
    const n = new URLSearchParams(q);
    for (const [k, v] of Object.entries(changes)) if (v) n.set(k, v); else n.delete(k);
    if (!('page' in changes) || n.get('page') === '1') n.delete('page');
    location.hash = '#/tools/' + n.toString();
  };
  const input = el('input', { attrs: { type: 'search', id: 'search', value: q.get('q') || '', placeholder: t('search_ph'), 'aria-label': t('search') } });
  page.append(el('form', { class: 'row filters', on: { submit: (e) => { e.preventDefault(); go({ q: input.value.trim() }); } } },
    el('span', { class: 'search' }, input, el('button', { text: t('search') }))));
  const api = new URLSearchParams({ limit: String(TOOLS_PAGE), offset: String((pageNo - 1) * TOOLS_PAGE) });
  if (q.get('q')) api.set('q', q.get('q'));
  const r = await call('GET', (q.get('q') ? '/v1/tools/search?' : '/v1/tools?') + api.toString());
  if (!r.ok) return page.append(errorBox(r));
  const tools = (r.data.results ? r.data.results.map((x) => x.tool) : r.data.tools) || [], total = r.data.total || 0;
  if (!tools.length && total) return go({ page: String(Math.ceil(total / TOOLS_PAGE)) });
  if (!tools.length) return page.append(el('p', { class: 'empty', text: t(q.get('q') ? 'empty_search' : 'empty_tools') }));
  const nav = () => pager(total, pageNo, TOOLS_PAGE, (n) => go({ page: String(n) }));
  page.append(nav());
  for (const tool of tools) {
    const f = tool.function || tool;
    page.append(el('h2', { class: 'tool' }, asData(link(['try', f.name], null, ...breakable(f.name)))), el('p', { text: plainText(f.description), attrs: { translate: 'no' } }), paramTree(f.parameters));
  }
  page.append(nav());
}

// paramTree shows a JSON schema as nested lists: name, type, required, description.
function paramTree(schema, required) {
  const props = (schema && schema.properties) || {};
  const req = new Set((schema && schema.required) || required || []);
  const names = Object.keys(props);
  if (!names.length) return el('p', { class: 'empty', text: t('no_params') });
  return el('div', { class: 'tree' }, el('ul', null, names.map((n) => {
    const s = props[n] || {};
    const kids = [];
    if (s.type === 'object') kids.push(paramTree(s));
    if (s.type === 'array' && s.items && s.items.type === 'object') kids.push(paramTree(s.items));
    return el('li', null, el('code', { text: n }), ' ', asData(el('span', { class: 'badge', text: s.type === 'array' ? 'array<' + ((s.items && s.items.type) || '?') + '>' : (s.type || 'any') })),
      req.has(n) ? ' ' + t('required') : '', s.enum ? asData(el('span', { text: ' [' + s.enum.join(' | ') + ']' })) : '',
      plainText(s.description) ? asData(el('span', { text: ' — ' + plainText(s.description) })) : '', kids);
  })));
}

// invisibleWarning says which invisible characters the engine removed
// from a plugin's texts (where it entered, by migration or when its row
// was loaded): the page shows the text the model reads, and this says
// the source held more than that.
function invisibleWarning(removed) {
  if (!removed || !removed.length) return null;
  return el('div', { class: 'warning', attrs: { id: 'plugin-invisible', role: 'status' } },
    el('strong', { text: t('invisible_removed') }), ' ', t('invisible_purpose'),
    el('ul', null, removed.map((r) => el('li', null, el('code', { text: r.field }), ': ' + r.count + ' (' + (r.kinds || []).join(', ') + ')'))));
}

// leftOutError says why the catalog left the row out (load_error):
// nobody but the administrator sees such a plugin.
function leftOutError(why) {
  if (!why) return null;
  return el('div', { class: 'error', attrs: { id: 'plugin-left-out', role: 'alert' } },
    el('strong', { text: t('left_out') }), ' ', t('left_out_purpose'), ' ', el('code', { text: why }));
}

async function pagePlugin(page, name) {
  heading(page, '', t('plugin_purpose'));
  page.querySelector('h1').append(asData(el('span', null, ...breakable(name))));
  const r = await call('GET', '/v1/plugins/' + encodeURIComponent(name));
  if (!r.ok) return page.append(errorBox(r));
  const p = r.data;
  const delMsg = el('div');
  page.append(el('p', { class: 'row' }, link(['try', name], t('try')), el('button', { class: 'danger', attrs: { id: 'plugin-delete' }, text: t('delete'), on: { click: () => askFirst(fill('del_plugin', { name }), t('delete'), async () => {
    const x = await call('DELETE', '/v1/plugins/' + encodeURIComponent(name));
    if (x.ok) location.hash = '#/catalog'; else delMsg.replaceChildren(errorBox(x));
  }) } })), delMsg, el('p', { class: 'description', attrs: { translate: 'no' }, text: plainText(p.description) }),
    leftOutError(p.load_error) || '', invisibleWarning(p.invisible_removed) || '', // append(null) would write "null"
    el('div', { class: 'grid2' },
      el('div', null, el('h2', { text: t('parameters') }), paramTree(p.parameters)),
      el('div', null, el('h2', { text: t('as_json') }), json(p.parameters))),
    el('div', { class: 'grid2' },
      el('div', null, el('h2', { text: t('execution') }), json(p.execution)),
      el('div', null, el('h2', { text: t('auth') }), json(p.auth_config))));
  // The administrator's classification, kept in its own column.
  const setting = p.consequential === undefined ? '' : String(p.consequential);
  const cons = el('select', { attrs: { id: 'plugin-consequential', 'aria-label': t('consequential') } },
    [['', 'cons_derived'], ['true', 'cons_yes'], ['false', 'cons_no']].map(([v, k]) => el('option', { attrs: { value: v, selected: v === setting }, text: t(k) })));
  const consOut = el('div');
  page.append(el('h2', { text: t('consequential') }), el('p', { class: 'purpose', text: t('consequential_purpose') }),
    el('div', { class: 'row' }, cons, el('button', { attrs: { id: 'plugin-consequential-save' }, text: t('save'), on: { click: async () => {
      const s = await call('POST', '/v1/plugins/consequential', { names: [name], consequential: cons.value === '' ? null : cons.value === 'true' });
      consOut.replaceChildren(s.ok ? el('p', { class: 'ok', text: t('saved') }) : errorBox(s));
    } } })), consOut);
  const doc = Object.assign({}, p);
  for (const k of ['plugin_id', 'create_by', 'create_time', 'update_by', 'update_time', 'invisible_removed', 'load_error']) delete doc[k];
  const area = el('textarea', { attrs: { id: 'plugin-doc', 'aria-label': t('edit') } });
  area.value = JSON.stringify(doc, null, 2);
  const out = el('div');
  page.append(el('h2', { text: t('edit') }), area, el('p', null, el('button', { attrs: { id: 'plugin-save' }, text: t('save'), on: { click: async () => {
    out.replaceChildren();
    let body;
    try { body = JSON.parse(area.value); } catch (e) {
      return out.append(el('p', { class: 'error' }, t('bad_json') + ' ', el('span', { class: 'detail', attrs: { translate: 'no' }, text: e.message })));
    }
    const s = await call('PUT', '/v1/plugins/' + encodeURIComponent(name), body);
    out.append(s.ok ? el('p', { class: 'ok', text: t('saved') }) : errorBox(s));
  } } })), out);
}

// field builds the input of one schema node; get() returns its value, or
// undefined when left empty.
function field(name, schema, required) {
  const s = schema || {};
  const label = (input) => el('label', null, el('span', null, name, required ? ' *' : '', plainText(s.description) ? el('span', { class: 'hint', text: ' ' + plainText(s.description) }) : null), input);
  if (s.enum) {
    const sel = el('select', { attrs: { name, required } }, el('option', { attrs: { value: '' }, text: t('choose') }),
      s.enum.map((v, i) => el('option', { attrs: { value: String(i) }, text: String(v) })));
    return { node: label(sel), get: () => (sel.value === '' ? undefined : s.enum[Number(sel.value)]) };
  }
  if (s.type === 'object') {
    const req = new Set(s.required || []);
    const kids = Object.entries(s.properties || {}).map(([k, v]) => [k, field(k, v, req.has(k))]);
    return { node: el('fieldset', null, el('legend', { text: name + (required ? ' *' : '') }), kids.map(([, f]) => f.node)),
      get: () => {
        const o = byName(); // a property named __proto__ is an argument like any other
        for (const [k, f] of kids) { const v = f.get(); if (v !== undefined) o[k] = v; }
        return Object.keys(o).length || required ? o : undefined;
      } };
  }
  if (s.type === 'array') {
    const items = [];
    const box = el('div');
    const add = el('button', { class: 'secondary', attrs: { type: 'button' }, text: t('add_item'), on: { click: () => {
      const f = field(name + '[' + items.length + ']', s.items || { type: 'string' }, false);
      const rm = el('button', { class: 'secondary', attrs: { type: 'button' }, text: t('remove') });
      const wrap = el('div', null, f.node, rm);
      rm.addEventListener('click', () => { items.splice(items.indexOf(f), 1); wrap.remove(); });
      items.push(f); box.append(wrap);
    } } });
    return { node: el('fieldset', null, el('legend', { text: name + (required ? ' *' : '') }), box, add),
      get: () => { const v = items.map((f) => f.get()).filter((x) => x !== undefined); return v.length || required ? v : undefined; } };
  }
  if (s.type === 'boolean') {
    const sel = el('select', { attrs: { name } }, ['', 'true', 'false'].map((v) => el('option', { attrs: { value: v }, text: v || t('choose') })));
    return { node: label(sel), get: () => (sel.value === '' ? undefined : sel.value === 'true') };
  }
  const num = s.type === 'integer' || s.type === 'number';
  const input = el('input', { attrs: { name, type: num ? 'number' : 'text', required, step: s.type === 'number' ? 'any' : null } });
  return { node: label(input), get: () => (input.value === '' ? undefined : num ? Number(input.value) : input.value) };
}

// sentRequest shows the request the engine sent upstream, as the engine
// masked it: method and URL, the headers (those carrying credentials
// marked), the body.
function sentRequest(req) {
  const headers = (req.headers || []).map((h) => [el('code', { text: h.name }),
    el('span', null, el('code', { text: h.value }), h.credential ? ' ' : null, h.credential ? el('span', { class: 'badge off', text: t('credential') }) : null)]);
  return el('div', { attrs: { id: 'try-sent' } }, el('h2', { text: t('sent_upstream') }),
    el('p', null, el('code', { class: 'sent-line', text: req.method + ' ' + req.url })),
    el('h3', { text: t('headers') }), table([t('name'), t('value')], headers),
    el('h3', { text: t('body') }), req.body ? el('pre', { class: 'sent-body', text: req.body }) : el('p', { class: 'purpose', text: t('no_body') }),
    req.body_truncated ? el('p', { class: 'purpose', text: t('body_cut') }) : null);
}

async function pageTry(page, name) {
  heading(page, t('try') + t('colon'), t('try_purpose'));
  page.querySelector('h1').append(asData(el('span', { text: name })));
  let params;
  if (isAdmin()) {
    const r = await call('GET', '/v1/plugins/' + encodeURIComponent(name));
    if (!r.ok) return page.append(errorBox(r));
    params = r.data.parameters;
  } else {
    const r = await call('GET', '/v1/tools?names=' + encodeURIComponent(name));
    if (!r.ok) return page.append(errorBox(r));
    const tool = (r.data.tools || [])[0];
    params = tool && (tool.function || tool).parameters;
  }
  const root = field(t('arguments_legend'), Object.assign({ type: 'object' }, params || {}), true);
  const user = el('input', { attrs: { type: 'number', id: 'run-user', value: session.user_id || '' } });
  if (!isAdmin()) user.disabled = true;
  const out = el('div', { attrs: { id: 'try-result' } });
  page.append(el('form', { class: 'stack', attrs: { id: 'try-form' }, on: { submit: async (e) => {
    e.preventDefault();
    out.replaceChildren();
    const body = { name, arguments: root.get() || {} };
    if (user.value) body.user_id = Number(user.value);
    // The administrator sees what the engine sent upstream (a per-user
    // session is refused it: the execution config is not its to see).
    if (isAdmin()) body.trace = true;
    out.append(el('h2', { text: t('request_sent') }), el('p', null, el('code', { text: 'POST /v1/execute' })), json(body));
    const r = await call('POST', '/v1/execute', body);
    if (r.data && r.data.execution_id !== undefined && r.data.ok !== undefined) {
      const envelope = Object.assign({}, r.data);
      delete envelope.request;
      if (r.data.request) out.append(sentRequest(r.data.request));
      out.append(el('h2', { text: t('response') }), json(r.data.output), el('h2', { text: t('envelope') }), json(envelope));
    } else out.append(errorBox(r));
    // Missing credentials: the credentials page of that user, where the
    // keys the tools need are marked.
    const err = (r.data && (r.data.error || (r.data.output && r.data.output.error))) || {};
    if (err.code === 'missing_credentials') {
      out.prepend(el('p', { class: 'missing-credentials' }, link(['credentials', String(body.user_id || session.user_id || '')], t('set_credentials'))));
    }
  } } }, root.node, el('label', null, t('run_as'), user), el('button', { attrs: { type: 'submit' }, text: t('run_btn') }),
  // The confirmation policy goes by token kind: an administrator's call is
  // sent at once, a consequential tool's too.
  isAdmin() ? el('p', { class: 'purpose', attrs: { id: 'try-at-once' }, text: t('try_at_once') }) : null), out);
}

// importLists says what an import did, a list per outcome: sections are
// [class, title's key, items]; each titled with its count.
function importLists(sections) {
  return sections.map(([cls, key, items]) => el('div', { class: cls }, el('h2', { text: t(key) + ' (' + (items || []).length + ')' }),
    (items || []).length ? el('ul', { attrs: { translate: 'no' } }, items.map((x) => el('li', null, x))) : el('p', { class: 'purpose', text: t('none') })));
}

async function pageImport(page) {
  heading(page, t('import'), t('import_purpose'));
  const doc = el('textarea', { attrs: { id: 'import-doc' } });
  const file = el('input', { attrs: { type: 'file', accept: '.json,.yaml,.yml' }, on: { change: async () => {
    if (file.files[0]) doc.value = await file.files[0].text();
  } } });
  const url = el('input', { attrs: { type: 'url', id: 'import-url' } });
  const prefix = el('input', { attrs: { id: 'import-prefix' } });
  const base = el('input', { attrs: { type: 'url', id: 'import-base' } });
  const out = el('div', { attrs: { id: 'import-result' } });
  const apply = el('button', { attrs: { id: 'import-apply', disabled: true }, text: t('apply') });
  const body = (dry) => {
    const b = { prefix: prefix.value || undefined, base_url: base.value || undefined, dry_run: dry };
    if (url.value) b.url = url.value; else b.document = doc.value;
    return b;
  };
  const bar = el('progress', { attrs: { max: 1, value: 0 } });
  const barText = el('span', { attrs: { 'aria-live': 'polite' } });
  const progress = el('div', { class: 'progress', attrs: { id: 'import-progress', hidden: true } }, bar, barText);
  const send = async (dry) => {
    out.replaceChildren(el('p', { text: dry ? t('loading') : t('applying') }));
    bar.max = 1; bar.value = 0; barText.textContent = '';
    progress.hidden = false;
    const r = await callStream('POST', '/v1/plugins/import/openapi', body(dry), (p) => {
      const key = p.phase === 'writing' && dry ? 'p_comparing' : 'p_' + p.phase;
      bar.max = Math.max(p.total, 1); bar.value = p.total ? p.done : 1;
      progress.dataset.phase = p.phase;
      barText.textContent = t(key).replace('{done}', p.done).replace('{total}', p.total);
    });
    out.replaceChildren();
    if (!r.ok && !(r.data && r.data.added)) { apply.disabled = true; return out.append(errorBox(r)); }
    const d = r.data;
    // Applied: the URL typed (a gateway's ?api_key= in it) leaves the
    // field, as the stored and listed location is redacted; a refusal or a
    // dry run keeps it (Apply sends it again).
    if (!dry) { out.append(el('p', { class: 'ok', text: t('applied') })); if (r.ok) url.value = ''; }
    if (d.up_to_date) out.append(el('p', { class: 'empty', text: t('up_to_date') }));
    out.append(...importLists([['diff-added', 'added', d.added], ['diff-changed', 'changed',
      (d.changed || []).map((n) => (d.changed_fields && d.changed_fields[n] ? n + ': ' + d.changed_fields[n].join(', ') : n))],
    ['diff-removed', 'removed', d.removed], ['diff-failed', 'failed', (d.failed || []).map((f) => f.key + ': ' + f.reason)],
    ['diff-unchanged', 'unchanged', d.unchanged], ['diff-warnings', 'warnings', d.warnings]]));
    apply.disabled = !dry;
  };
  apply.addEventListener('click', () => send(false));
  for (const n of [doc, url, prefix, base]) n.addEventListener('input', () => { apply.disabled = true; });
  page.append(el('div', { class: 'stack' }, el('label', null, t('paste'), doc), el('label', null, t('upload'), file),
    el('label', null, t('url'), url), el('label', null, t('prefix'), prefix), el('label', null, t('base_url'), base),
    el('p', { class: 'purpose', text: t('import_first') }),
    el('div', { class: 'row' }, el('button', { attrs: { id: 'import-dry' }, text: t('dry_run'), on: { click: () => send(true) } }), apply)), progress, out);
}

async function pageMCP(page) {
  heading(page, t('mcp'), t('mcp_purpose'));
  const r = await call('GET', '/v1/mcp/servers');
  if (r.status === 404) return page.append(el('p', { class: 'empty', text: t('mcp_off') }));
  if (!r.ok) return page.append(errorBox(r));
  const name = el('input', { attrs: { id: 'mcp-name', required: true } });
  const url = el('input', { attrs: { id: 'mcp-url', type: 'url', required: true } });
  const transport = asData(el('select', null, ['streamable_http', 'sse'].map((v) => el('option', { attrs: { value: v }, text: v }))));
  const msg = el('div');
  page.append(el('form', { class: 'row', attrs: { id: 'mcp-form' }, on: { submit: async (e) => {
    e.preventDefault();
    const s = await call('POST', '/v1/mcp/servers', { name: name.value, url: url.value, transport: transport.value });
    if (s.ok) route(); else msg.replaceChildren(errorBox(s));
  } } }, el('label', null, t('name'), name), el('label', null, t('url_label'), url), el('label', null, t('transport'), transport),
  el('button', { text: t('register') })), msg,
  el('p', { class: 'purpose', attrs: { id: 'mcp-more' } }, t('mcp_more') + ' ', asData(el('code', { text: 'blindexec mcp server add --header K=V --auth JSON' })),
    ' · ', asData(el('code', { text: 'POST /v1/mcp/servers' })), ' · ', asData(el('code', { text: 'docs/mcp.md' }))));
  const servers = r.data.servers || [];
  if (!servers.length) return page.append(el('p', { class: 'empty', text: t('empty_mcp') }));
  const detail = el('div', { attrs: { id: 'mcp-detail' } });
  page.append(el('div', { attrs: { id: 'mcp-servers' } }, table([t('name'), t('url_label'), t('actions')], servers.map((s) => {
    const id = encodeURIComponent(s.mcp_id || s.id || s.name);
    const tools = (refresh) => async () => {
      const x = await call('GET', '/v1/mcp/servers/' + id + '/tools' + (refresh ? '?refresh=1' : ''));
      detail.replaceChildren(el('h2', { text: s.name }), x.ok ? table([t('name'), t('description')],
        (x.data.tools || []).map((tl) => [el('code', { text: tl.name }), el('span', { text: plainText(tl.description) })])) : errorBox(x));
    };
    return [el('span', { text: s.name, attrs: { translate: 'no' } }), el('code', { text: s.url }), el('span', null,
      el('button', { class: 'secondary tools', text: t('list_tools'), on: { click: tools(false) } }), ' ',
      el('button', { class: 'secondary', text: t('refresh'), on: { click: tools(true) } }), ' ',
      el('button', { text: t('import_tools'), on: { click: async () => {
        const x = await call('POST', '/v1/plugins/import/mcp', { server: s.mcp_id || s.id || s.name });
        if (!x.ok) return detail.replaceChildren(errorBox(x));
        // In words, as an OpenAPI import's: not the report's JSON.
        const d = x.data;
        detail.replaceChildren(el('h2', { text: s.name }), el('p', { class: 'ok', text: t('applied') }), ...importLists([['diff-added', 'added', d.added],
          ['diff-changed', 'changed', d.updated], ['diff-removed', 'mcp_disabled', d.disabled],
          ['diff-failed', 'failed', (d.failed || []).map((f) => f.tool + ': ' + f.error)], ['diff-unchanged', 'unchanged', d.unchanged],
          ['diff-waits', 'mcp_waits', Object.keys(d.consequential || {}).filter((n) => d.consequential[n]).sort()], ['diff-warnings', 'warnings', d.warnings]]));
      } } }), ' ',
      el('button', { class: 'danger', text: t('delete'), on: { click: () => askFirst(fill('del_mcp', { name: s.name }), t('delete'), async () => {
        const x = await call('DELETE', '/v1/mcp/servers/' + id);
        if (x.ok) route(); else detail.replaceChildren(errorBox(x));
      }) } }))];
  }))), detail);
}

async function pageCredentials(page, uid) {
  heading(page, t('credentials'), t('credentials_purpose'));
  const user = uid || (isAdmin() ? '' : String(session.user_id));
  const who = el('input', { attrs: { type: 'number', id: 'cred-user', value: user, required: true } });
  if (!isAdmin()) who.disabled = true;
  page.append(el('form', { class: 'row', on: { submit: (e) => { e.preventDefault(); location.hash = '#/credentials/' + encodeURIComponent(who.value); } } },
    el('label', null, t('user_id'), who), el('button', { text: t('load') })));
  if (!user) return;
  const key = el('input', { attrs: { id: 'cred-key', required: true, autocomplete: 'off' } });
  const value = el('input', { attrs: { id: 'cred-value', type: 'password', required: true, autocomplete: 'new-password' } });
  const msg = el('div');
  const put = async (k, v) => {
    const r = await call('PUT', '/v1/credentials/' + encodeURIComponent(user) + '/' + encodeURIComponent(k), { value: v });
    if (r.ok) route(); else msg.replaceChildren(errorBox(r));
  };
  // What was typed stays until it is stored (a refused key is corrected,
  // not the value typed again); the page redraws without it once stored.
  page.append(el('form', { class: 'row', attrs: { id: 'cred-form' }, on: { submit: (e) => { e.preventDefault(); put(key.value, value.value); } } },
    el('label', null, t('key'), key), el('label', null, t('value'), value), el('button', { text: t('set_btn') })), msg);
  const r = await call('GET', '/v1/credentials/' + encodeURIComponent(user) + '?needed=true');
  if (!r.ok) return page.append(errorBox(r));
  const creds = r.data.credentials || [], needed = r.data.needed || [];
  const readers = byName();
  for (const n of needed) readers[n.key] = n;
  const toolsOf = (n) => (n && n.tools.length ? n.tools.join(', ') + (n.tools_total > n.tools.length ? ' ' + fill('more_tools', { n: n.tools_total - n.tools.length }) : '') : t('no_tools_read'));
  // The keys the user's enabled tools read: the missing ones first, each
  // settable in place (an empty basic-auth password too).
  page.append(el('h2', { text: t('needed_keys') }), el('p', { class: 'purpose', text: t('needed_purpose') }));
  if (!needed.length) page.append(el('p', { class: 'empty', text: t('empty_needed') }));
  else {
    const order = [...needed].sort((a, b) => Number(a.set) - Number(b.set));
    page.append(el('div', { attrs: { id: 'cred-needed' } }, table([t('key'), t('status'), t('tools_reading'), t('actions')], order.map((n) => {
      const nv = el('input', { attrs: { type: 'password', autocomplete: 'new-password', 'aria-label': t('value') } });
      return [el('code', { text: n.key, attrs: { translate: 'no' } }),
        el('span', { class: 'badge ' + (n.set ? 'on' : 'off'), attrs: { 'data-key': n.key }, text: n.set ? t('set') : t('missing') }),
        el('span', { attrs: { translate: 'no' }, text: toolsOf(n) }),
        el('span', null, nv, el('button', { class: 'secondary', text: n.set ? t('replace') : t('set_btn'), on: { click: () => { if (nv.value) put(n.key, nv.value); } } }),
          n.may_be_empty ? el('button', { class: 'secondary set-empty', text: t('set_empty'), attrs: { title: t('may_be_empty') }, on: { click: () => put(n.key, '') } }) : null)];
    }))));
  }
  if (!creds.length) return page.append(el('p', { class: 'empty', text: t('empty_creds') }));
  page.append(el('h2', { text: t('credentials') }), el('div', { attrs: { id: 'cred-list' } }, table([t('key'), t('status'), t('updated'), t('actions')], creds.map((c) => {
    const nv = el('input', { attrs: { type: 'password', autocomplete: 'new-password', 'aria-label': t('value') } });
    return [el('code', { text: c.key, attrs: { translate: 'no' } }), el('span', { class: 'badge on', text: t('set') }), el('span', { text: fmtTime(c.update_time) }),
      el('span', null, nv, el('button', { class: 'secondary', text: t('replace'), on: { click: () => { if (nv.value) put(c.key, nv.value); } } }), ' ',
        el('button', { class: 'danger', text: t('delete'), on: { click: () => askFirst(fill('del_credential', { key: c.key, user, tools: toolsOf(readers[c.key]) }), t('delete'), async () => {
          const x = await call('DELETE', '/v1/credentials/' + encodeURIComponent(user) + '/' + encodeURIComponent(c.key));
          if (x.ok) route(); else msg.replaceChildren(errorBox(x));
        }) } }))];
  }))));
}

// chart draws, per plugin, the calls in each time bucket as bars and the
// bucket's average latency as a line (its own scale, the maximum written
// beside it), over a time axis marked at both ends; each bar's title gives
// its figures.
function chart(execs) {
  const NS = 'http://www.w3.org/2000/svg';
  const svgEl = (tag, attrs, text) => {
    const n = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, String(v));
    if (text !== undefined) n.textContent = text;
    return n;
  };
  const times = execs.map((e) => Date.parse(e.create_time));
  const lo = Math.min(...times), hi = Math.max(...times) + 1;
  const buckets = 24, W = 720, head = 18, plotH = 44, rowH = head + plotH + 14, axisH = 20;
  const byPlugin = byName();
  for (const e of execs) {
    const b = Math.min(buckets - 1, Math.floor(((Date.parse(e.create_time) - lo) / (hi - lo)) * buckets));
    const row = byPlugin[e.plugin_name] || (byPlugin[e.plugin_name] = Array.from({ length: buckets }, () => ({ n: 0, ms: 0 })));
    row[b].n++; row[b].ms += e.latency_ms;
  }
  const names = Object.keys(byPlugin).sort((a, b) => byPlugin[b].reduce((s, c) => s + c.n, 0) - byPlugin[a].reduce((s, c) => s + c.n, 0)).slice(0, 12);
  const svg = svgEl('svg', { viewBox: `0 0 ${W} ${names.length * rowH + axisH}`, role: 'img', 'aria-label': t('calls_chart') });
  const bw = W / buckets;
  names.forEach((n, i) => {
    const rows = byPlugin[n], y0 = i * rowH, base = y0 + head + plotH;
    const total = rows.reduce((a, c) => a + c.n, 0), ms = rows.reduce((a, c) => a + c.ms, 0);
    const maxN = Math.max(1, ...rows.map((c) => c.n));
    const peakMs = Math.max(...rows.map((c) => (c.n ? c.ms / c.n : 0)));
    const maxMs = Math.max(1, peakMs); // the line's scale
    svg.append(svgEl('text', { x: 0, y: y0 + 13, 'font-size': 12, 'font-weight': 600 }, n));
    svg.append(svgEl('text', { x: W, y: y0 + 13, 'font-size': 11, 'text-anchor': 'end', fill: '#57606a' },
      `${total} ${t('calls')} · ${t('avg')} ${Math.round(ms / total)} ${t('ms')} · ${t('max')} ${Math.round(peakMs)} ${t('ms')}`));
    svg.append(svgEl('line', { x1: 0, y1: base, x2: W, y2: base, stroke: '#d0d7de' }));
    const line = [];
    rows.forEach((c, b) => {
      if (!c.n) return;
      const h = Math.max(2, (c.n / maxN) * (plotH - 4));
      const bar = svgEl('rect', { x: b * bw + 1, y: base - h, width: bw - 2, height: h, fill: '#1f6feb', opacity: 0.8 });
      bar.append(svgEl('title', {}, `${c.n} ${t('calls')}, ${t('avg')} ${Math.round(c.ms / c.n)} ${t('ms')}`));
      svg.append(bar);
      line.push(`${b * bw + bw / 2},${base - ((c.ms / c.n) / maxMs) * (plotH - 4)}`);
    });
    if (line.length > 1) svg.append(svgEl('polyline', { points: line.join(' '), fill: 'none', stroke: '#d4700b', 'stroke-width': 2 }));
    else svg.append(svgEl('circle', { cx: line[0].split(',')[0], cy: line[0].split(',')[1], r: 3, fill: '#d4700b' }));
  });
  const yAxis = names.length * rowH + 14;
  svg.append(svgEl('text', { x: 0, y: yAxis, 'font-size': 11, fill: '#57606a' }, fmtTime(new Date(lo).toISOString())));
  svg.append(svgEl('text', { x: W, y: yAxis, 'font-size': 11, fill: '#57606a', 'text-anchor': 'end' }, fmtTime(new Date(hi).toISOString())));
  return el('div', { class: 'chart' }, svg,
    el('p', { class: 'legend' }, el('span', { class: 'key calls' }), t('calls'), ' ', el('span', { class: 'key latency' }), t('latency')));
}

async function pageActivity(page, query) {
  heading(page, t('activity'), t('activity_purpose'));
  const q = new URLSearchParams(query || '');
  const inp = (id, type) => el('input', { attrs: { id: 'f-' + id, type: type || 'text', value: q.get(id) || '' } });
  // Times as text in one pattern for both languages (a browser's date
  // picker follows the browser's language, not the console's), read in
  // the browser's time zone.
  const when = (id) => { const n = inp(id); n.placeholder = t('datetime_ph'); n.pattern = '\\d{4}-\\d{2}-\\d{2}( \\d{2}:\\d{2})?'; return n; };
  const f = { plugin: inp('plugin'), user_id: inp('user_id', 'number'), run_id: inp('run_id'), trace_id: inp('trace_id'), since: when('since'), until: when('until') };
  if (!isAdmin()) { f.user_id.value = session.user_id; f.user_id.disabled = true; }
  const outcome = el('select', { attrs: { id: 'f-outcome' } }, ['', 'ok', 'error', 'refused'].map((v) => el('option', { attrs: { value: v, selected: q.get('outcome') === v }, text: v ? t('outcome_' + v) : t('any') })));
  page.append(el('form', { class: 'row', on: { submit: (e) => {
    e.preventDefault();
    const n = new URLSearchParams();
    for (const [k, i] of Object.entries(f)) if (i.value && !i.disabled) n.set(k, i.value);
    if (outcome.value) n.set('outcome', outcome.value);
    location.hash = '#/activity/' + n.toString();
  } } }, el('label', null, t('plugin'), f.plugin), el('label', null, t('user_id'), f.user_id), el('label', null, t('run_id'), f.run_id),
  el('label', null, t('trace_id'), f.trace_id), el('label', null, t('outcome'), outcome), el('label', null, t('since'), f.since), el('label', null, t('until'), f.until), el('button', { text: t('filter') })));
  const api = new URLSearchParams({ limit: '500' });
  for (const k of ['plugin', 'user_id', 'run_id', 'trace_id']) if (q.get(k)) api.set(k, q.get(k));
  for (const k of ['since', 'until']) {
    const d = q.get(k) && new Date(q.get(k).replace(' ', 'T'));
    if (d && !Number.isNaN(d.getTime())) api.set(k, d.toISOString());
  }
  const r = await call('GET', '/v1/executions?' + api.toString());
  if (!r.ok) page.append(errorBox(r));
  else {
    const execs = (r.data.executions || []).filter((e) => !q.get('outcome') || e.status === q.get('outcome'));
    if (!execs.length) page.append(el('p', { class: 'empty', text: t('empty_activity') }));
    else {
      page.append(el('h2', { text: t('calls_chart') }), chart(execs));
      // The trace id (OpenTelemetry, when the engine traces) links to
      // the calls of that trace; the trace itself is in the operator's
      // tracing backend (Jaeger, SkyWalking...).
      page.append(table([t('time'), t('plugin'), t('user_id'), t('outcome'), t('http_status'), t('latency'), t('run_id'), t('trace_id'), t('error')], execs.map((e) => [
        el('span', { text: fmtTime(e.create_time) }), el('span', { text: e.plugin_name, attrs: { translate: 'no' } }), el('span', { text: e.user_id ?? '' }),
        el('span', { class: 'badge ' + (e.status === 'ok' ? 'on' : 'off'), text: I18N.en['outcome_' + e.status] ? t('outcome_' + e.status) : e.status }), el('span', { text: e.http_status || '' }),
        el('span', { text: e.latency_ms }), e.run_id ? link(['run', e.run_id], e.run_id) : '',
        e.trace_id ? el('a', { class: 'trace-id', attrs: { href: '#/activity/trace_id=' + encodeURIComponent(e.trace_id) }, text: e.trace_id }) : '',
        el('span', { text: e.error_message || e.error_class || '', attrs: { translate: 'no' } })])));
    }
  }
  if (!isAdmin()) return;
  page.append(el('h2', { text: t('audit') }));
  // The log in words (GET /v1/audit answers in the console's language),
  // a page at a time; the export is the same route as JSON lines.
  const holder = el('div', { attrs: { id: 'audit' } });
  page.append(holder);
  const more = async (cursor) => {
    const a = await call('GET', '/v1/audit?limit=100' + (cursor ? '&cursor=' + encodeURIComponent(cursor) : ''));
    if (!a.ok) return holder.append(errorBox(a));
    const events = a.data.events || [];
    if (!events.length && !cursor) return holder.append(el('p', { class: 'empty', text: t('empty_audit') }));
    holder.append(table([t('time'), t('who'), t('via'), t('what')], events.map((e) => [
      el('span', { text: fmtTime(e.time) }), el('span', { text: e.who }), el('span', { text: I18N.en['via_' + e.via] ? t('via_' + e.via) : e.via }),
      el('span', { class: 'summary', attrs: { 'data-op': e.op || null }, text: e.summary })])));
    if (a.data.next) {
      const b = el('button', { class: 'secondary more', text: t('audit_more'), on: { click: () => { b.remove(); more(a.data.next); } } });
      holder.append(b);
    }
  };
  await more('');
}

async function pageQuotas(page, uid) {
  heading(page, t('quotas'), t('quotas_purpose'));
  const msg = el('div');
  if (isAdmin()) {
    const r = await call('GET', '/v1/quotas/rules');
    if (!r.ok) return page.append(errorBox(r));
    const inp = (id, type) => el('input', { attrs: { id: 'q-' + id, type: type || 'text' } });
    const f = { name: inp('name'), user_id: inp('user', 'number'), value: inp('value'), calls: inp('calls', 'number') };
    f.name.required = true;
    const kind = el('select', { attrs: { id: 'q-kind' } }, ['all_tools', 'plugins_sel', 'tags_sel', 'consequential_sel', 'runs_sel'].map((k) => el('option', { attrs: { value: k }, text: t(k) })));
    const win = el('select', { attrs: { id: 'q-window' } }, ['minute', 'hour', 'day'].map((v) => el('option', { attrs: { value: v, selected: v === 'day' }, text: t('win_' + v) })));
    page.append(el('form', { class: 'row', attrs: { id: 'quota-form' }, on: { submit: async (e) => {
      e.preventDefault();
      const rule = { name: f.name.value };
      if (f.user_id.value !== '') rule.user_id = Number(f.user_id.value);
      const list = f.value.value.split(',').map((x) => x.trim()).filter(Boolean);
      const n = Number(f.calls.value);
      if (kind.value === 'runs_sel') rule.run_tokens_per_day = n;
      else {
        rule.calls = n; rule.window = win.value;
        if (kind.value === 'plugins_sel') rule.plugins = list;
        if (kind.value === 'tags_sel') rule.tags = list;
        if (kind.value === 'consequential_sel') rule.consequential = true;
      }
      const x = await call('POST', '/v1/quotas/rules', rule);
      if (x.ok) route(); else msg.replaceChildren(errorBox(x));
    } } }, el('label', null, t('rule_name'), f.name), el('label', null, t('user_id'), f.user_id), el('label', null, t('applies_to'), kind),
    el('label', null, t('plugins_sel') + ' / ' + t('tags_sel'), f.value), el('label', null, t('limit'), f.calls), el('label', null, t('window'), win),
    el('button', { text: t('add_rule') })), msg);
    const rules = r.data.rules || [];
    if (!rules.length) page.append(el('p', { class: 'empty', text: t('empty_rules') }));
    else page.append(el('div', { attrs: { id: 'quota-rules' } }, table([t('rule_name'), t('user_id'), t('applies_to'), t('limit'), t('actions')], rules.map((q) => [
      el('code', { text: q.name }), el('span', { text: q.user_id ?? t('every_user') }),
      el('span', { text: q.run_tokens_per_day ? t('runs_sel') : q.plugins ? q.plugins.join(', ') : q.tags ? fill('applies_tagged', { tags: q.tags.join(', ') }) : q.consequential ? t('consequential_sel') : t('all_tools') }),
      el('span', { text: q.run_tokens_per_day ? perWindow(q.run_tokens_per_day, 'run_tokens', 'day') : perWindow(q.calls, 'calls', q.window) }),
      el('button', { class: 'danger', text: t('delete'), on: { click: () => askFirst(fill('del_rule', { name: q.name }), t('delete'), async () => {
        const x = await call('DELETE', '/v1/quotas/rules/' + encodeURIComponent(q.name));
        if (x.ok) route(); else msg.replaceChildren(errorBox(x));
      }) } })]))));
  }
  const user = uid || (isAdmin() ? '' : String(session.user_id));
  const who = el('input', { attrs: { type: 'number', id: 'quota-user', value: user, required: true } });
  if (!isAdmin()) who.disabled = true;
  page.append(el('h2', { text: t('used') }), el('form', { class: 'row', on: { submit: (e) => { e.preventDefault(); location.hash = '#/quotas/' + encodeURIComponent(who.value); } } },
    el('label', null, t('user_id'), who), el('button', { text: t('show_use') })));
  if (user === '') return;
  const u = await call('GET', '/v1/quotas?user_id=' + encodeURIComponent(user));
  if (!u.ok) return page.append(errorBox(u));
  const uses = u.data.quotas || [];
  if (!uses.length) return page.append(el('p', { class: 'empty', text: t('empty_use') }));
  page.append(el('p', { class: 'purpose', attrs: { id: 'quota-tz' }, text: fill('quota_tz', { offset: zoneOffset(uses[0].resets_at) }) }),
    el('div', { attrs: { id: 'quota-use' } }, table([t('rule_name'), t('applies_to'), t('used'), t('limit'), t('resets_at')], uses.map((q) => [
      el('code', { text: q.rule }), el('span', { text: appliesTo(q.applies_to) }), el('span', { class: 'badge ' + (q.used >= q.limit ? 'off' : 'on'), text: q.used.toLocaleString(lang) }),
      el('span', { text: perWindow(q.limit, q.unit === 'calls' ? 'calls' : 'run_tokens', q.window) }), el('span', { class: 'resets', text: fmtInZone(q.resets_at) })]))));
}

// perWindow says a limit in words: "10 calls a minute", "每分钟 10 次调用".
const perWindow = (n, unit, window) => fill('per_window', { n: Number(n).toLocaleString(lang), unit: t('unit_' + unit), window: t('win_' + (window || 'day')) });

// appliesTo says what a quota applies to, as the engine wrote it for
// its use listing ("all tools", "consequential tools", "tools tagged a or
// b", "runs", or the tools' names).
function appliesTo(s) {
  const words = { 'all tools': 'all_tools', 'consequential tools': 'consequential_sel', runs: 'applies_runs' };
  if (words[s]) return t(words[s]);
  const tagged = /^tools tagged (.*)$/.exec(s || '');
  return tagged ? fill('applies_tagged', { tags: tagged[1] }) : s;
}

// connectAt asks the engine for a fresh start URL of provider for the
// signed-in user (asking for scopes beside the provider's own, those a
// waiting tool needs) and follows it: the provider's sign-in, then the
// engine's confirmation page. The URL is the engine's answer to this
// session's request, never a text of the page.
async function connectAt(provider, msg, scopes) {
  const r = await call('POST', '/v1/connections/' + encodeURIComponent(provider) + '/authorize', scopes && scopes.length ? { scopes } : {});
  if (!r.ok) return msg.replaceChildren(errorBox(r));
  const u = new URL(r.data.url, location.href);
  if (u.protocol !== 'https:' && u.protocol !== 'http:') return msg.replaceChildren(errorBox({ status: 0, data: { error: { message: 'not an http(s) URL' } } }));
  location.assign(u.href);
}

// providersSection is the administrator's list of OAuth providers and
// the form that registers one or replaces it (Edit fills it in; an
// empty client secret keeps the stored one; extra_params, which the form
// does not show, are kept as they are).
async function providersSection(page) {
  page.append(el('h2', { text: t('providers') }), el('p', { class: 'purpose', text: t('providers_purpose') }));
  const r = await call('GET', '/v1/oauth/providers');
  if (!r.ok) return page.append(errorBox(r));
  page.append(r.data.redirect_uri ? el('p', null, t('redirect_uri') + ': ', el('code', { attrs: { id: 'redirect-uri' }, text: r.data.redirect_uri }))
    : el('p', { class: 'error', text: t('no_browser_url') }));
  const f = {};
  const input = (k, type) => (f[k] = el('input', { attrs: { id: 'prov-' + k, name: k, type: type || 'text', autocomplete: type === 'password' ? 'new-password' : 'off' } }));
  const check = (k, on = true) => (f[k] = el('input', { attrs: { id: 'prov-' + k, type: 'checkbox', checked: on } }));
  let edited = null; // the provider Edit filled the form with
  const msg = el('div');
  const form = el('form', { class: 'stack', attrs: { id: 'provider-form' }, on: { submit: async (e) => {
    e.preventDefault();
    const body = { name: f.name.value, authorization_url: f.authorization_url.value, token_url: f.token_url.value,
      revocation_url: f.revocation_url.value || undefined, issuer: f.issuer.value || undefined,
      scopes: f.scopes.value.split(/\s+/).filter(Boolean), client_id: f.client_id.value,
      client_secret: f.client_secret.value || undefined, pkce: f.pkce.checked, enabled: f.enabled.checked,
      authorization_response_iss_parameter_supported: f.iss_supported.checked,
      extra_params: edited && edited.name === f.name.value ? edited.extra_params : undefined };
    // The secret typed stays until it is stored: a refusal is corrected, not typed again.
    const x = await call('POST', '/v1/oauth/providers', body);
    if (x.ok) route(); else msg.replaceChildren(errorBox(x));
  } } },
  el('div', { class: 'row' }, el('label', null, t('name'), input('name')), el('label', null, t('client_id'), input('client_id')),
    el('label', null, t('client_secret'), input('client_secret', 'password'))),
  el('label', null, t('authorization_url'), input('authorization_url', 'url')), el('label', null, t('token_url'), input('token_url', 'url')),
  el('div', { class: 'row' }, el('label', null, t('revocation_url'), input('revocation_url', 'url')), el('label', null, t('issuer'), input('issuer')),
    el('label', null, check('iss_supported', false), ' ', t('iss_supported'))),
  el('div', { class: 'row' }, el('label', null, t('scopes'), input('scopes')), el('label', null, check('pkce'), ' ', t('pkce')),
    el('label', null, check('enabled'), ' ', t('provider_enabled'))),
  el('button', { text: t('save_provider') }));
  const providers = r.data.providers || [];
  if (!providers.length) page.append(el('p', { class: 'empty', text: t('empty_provider_list') }));
  else {
    page.append(el('div', { attrs: { id: 'providers' } }, table([t('name'), t('authorization_url'), t('scopes'), t('status'), t('actions')], providers.map((p) => [
      el('code', { text: p.name }), el('code', { class: 'url', text: p.authorization_url }), el('span', { text: (p.scopes || []).join(' ') }),
      el('span', null, el('span', { class: 'badge ' + (p.enabled ? 'on' : 'off'), text: p.enabled ? t('enabled') : t('disabled') }), ' ',
        el('span', { class: 'badge', text: p.client_secret_set ? t('secret_set') : t('no_secret') })),
      el('span', null, el('button', { class: 'secondary edit', text: t('edit'), on: { click: () => {
        for (const k of ['name', 'authorization_url', 'token_url', 'revocation_url', 'issuer', 'client_id']) f[k].value = p[k] || '';
        f.scopes.value = (p.scopes || []).join(' ');
        f.pkce.checked = p.pkce;
        f.iss_supported.checked = !!p.authorization_response_iss_parameter_supported;
        f.enabled.checked = p.enabled;
        f.client_secret.placeholder = p.client_secret_set ? t('secret_kept') : '';
        edited = p;
        f.name.focus();
      } } }), ' ',
      el('button', { class: 'danger', text: t('delete'), on: { click: async () => {
        // Name what goes with it: every user's connection to it.
        const c = await call('GET', '/v1/connections');
        const count = c.ok ? (c.data.connections || []).filter((x) => x.provider === p.name).length : '?';
        askFirst(fill('del_provider', { name: p.name, count: String(count) }), t('delete'), async () => {
          const x = await call('DELETE', '/v1/oauth/providers/' + encodeURIComponent(p.name));
          if (x.ok) route(); else msg.replaceChildren(errorBox(x));
        });
      } } }))]))));
  }
  page.append(form, msg);
}

// pageConnections: a user's own connections (connect, reconnect,
// disconnect), or, for the administrator, every user's (who is connected
// to what) with a user filter.
async function pageConnections(page, uid) {
  const admin = isAdmin();
  heading(page, t('connections'), admin ? t('connections_admin_purpose') : t('connections_purpose'));
  const msg = el('div', { attrs: { id: 'conn-msg' } });
  let q = '';
  if (admin) {
    await providersSection(page);
    const who = el('input', { attrs: { type: 'number', id: 'conn-user', value: uid || '', placeholder: t('all_users') } });
    page.append(el('h2', { text: t('connections') }),
      el('form', { class: 'row', on: { submit: (e) => { e.preventDefault(); location.hash = '#/connections/' + encodeURIComponent(who.value); } } },
        el('label', null, t('user_id'), who), el('button', { text: t('load') })));
    if (uid) q = '?user_id=' + encodeURIComponent(uid);
  } else {
    const pr = await call('GET', '/v1/oauth/providers');
    if (pr.ok) {
      const enabled = (pr.data.providers || []).filter((p) => p.enabled);
      if (!enabled.length) page.append(el('p', { class: 'empty', text: t('empty_providers') }));
      else {
        const sel = el('select', { attrs: { id: 'conn-provider' } }, enabled.map((p) => el('option', { attrs: { value: p.name }, text: p.name })));
        page.append(el('form', { class: 'row', attrs: { id: 'conn-form' }, on: { submit: (e) => { e.preventDefault(); connectAt(sel.value, msg); } } },
          el('label', null, t('connect_to'), sel), el('button', { text: t('connect') })));
      }
    } else if (pr.status !== 403) {
      // 403: an engine that lists providers to the service alone leaves
      // Reconnect here and Connect on the Approvals page.
      page.append(errorBox(pr));
    }
  }
  page.append(msg);
  const r = await call('GET', '/v1/connections' + q);
  if (!r.ok) return page.append(errorBox(r));
  const conns = r.data.connections || [];
  if (!conns.length) return page.append(el('p', { class: 'empty', text: t('empty_connections') }));
  const cols = [t('provider'), t('account'), t('scopes'), t('state'), t('expires_at'), t('actions')];
  if (admin) cols.unshift(t('user_id'));
  page.append(el('div', { attrs: { id: 'connections' } }, table(cols, conns.map((c) => {
    const broken = c.state !== 'connected';
    const del = el('button', { class: 'danger disconnect', text: t('disconnect'), on: { click: () => askFirst(fill('del_connection', { user: c.user_id, provider: c.provider }), t('disconnect'), async () => {
      const path = '/v1/connections/' + encodeURIComponent(c.provider) + (admin ? '?user_id=' + encodeURIComponent(c.user_id) : '');
      const x = await call('DELETE', path);
      if (x.ok) route(); else msg.replaceChildren(errorBox(x));
    }) } });
    const row = [el('code', { text: c.provider }), el('span', { text: c.account || '' }), el('span', { text: (c.scopes || []).join(' ') }),
      el('span', { class: 'badge ' + (broken ? 'off' : 'on'), text: broken ? t('state_broken') : t('state_connected') }),
      el('span', { text: fmtShort(c.expires_at) }),
      el('span', null, !admin && broken ? el('button', { class: 'secondary reconnect', text: t('reconnect'), on: { click: () => connectAt(c.provider, msg, c.scopes) } }) : '', ' ', del)];
    if (admin) row.unshift(el('span', { text: String(c.user_id) }));
    return row;
  }))));
}

// authorizationItem is a run's call waiting for the user to connect an
// account: Connect (the user's own session: a fresh start URL), then
// Continue, which makes the call; Cancel tells the model the account was
// not connected.
function authorizationItem(p, run) {
  const msg = el('div');
  const decide = async (decision) => {
    const r = await call('POST', '/v1/runs/' + encodeURIComponent(run) + '/resume', { decisions: [{ id: p.id, decision }] });
    if (r.ok) { msg.replaceChildren(el('p', { text: fill('decided', { outcome: decision }) })); route(); } else msg.replaceChildren(errorBox(r));
  };
  return el('section', { class: 'approval authorization', attrs: { 'data-id': p.id } },
    el('h2', null, el('code', { text: p.tool }), ' ', el('span', { class: 'badge', text: t('from_run') + ' ' + run })),
    el('p', { text: fill('needs_account', { provider: p.provider }) }),
    table([t('scopes'), t('missing_scopes')], [[el('span', { text: (p.scopes || []).join(' ') }), el('span', { text: (p.missing_scopes || []).join(' ') })]]),
    el('h3', { text: t('arguments') }), json(p.arguments),
    el('p', null, t('expires') + ': ' + fmtTime(p.expires_at)),
    el('p', { class: 'purpose', text: t('connect_then') }),
    el('div', { class: 'row' },
      isAdmin() ? '' : el('button', { class: 'connect', text: t('connect'), on: { click: () => connectAt(p.provider, msg, p.scopes) } }), ' ',
      el('button', { class: 'secondary continue', text: t('continue_btn'), on: { click: () => decide('continue') } }), ' ',
      el('button', { class: 'danger cancel', text: t('cancel_btn'), on: { click: () => decide('cancel') } })), msg);
}

// --- shell ---

const ADMIN_NAV = [['catalog', 'catalog'], ['import', 'import'], ['mcp', 'mcp'], ['credentials', 'credentials'], ['connections', 'connections'], ['quotas', 'quotas'], ['approvals', 'approvals'], ['activity', 'activity']];
const USER_NAV = [['tools', 'tools'], ['credentials', 'credentials'], ['connections', 'connections'], ['quotas', 'quotas'], ['approvals', 'approvals'], ['activity', 'activity']];
for (const x of EXTRA) {
  for (const [r, k, who] of x.nav || []) {
    if (who !== 'user') ADMIN_NAV.push([r, k]);
    if (who !== 'admin') USER_NAV.push([r, k]);
  }
}

// PAGES are the pages other files register (registerPage): name →
// {render(page, parts, rest), admin}.
const PAGES = {};

// registerPage adds a page from its own file: render(page, parts, rest)
// draws it into #page (parts: the route's decoded segments, rest: its
// query undecoded); admin pages answer a user's session "forbidden";
// nav (the key of its title) puts it in the administrator's navigation
// (and the user's, with user: true).
function registerPage(name, render, opts) {
  const o = opts || {};
  PAGES[name] = { render, admin: !!o.admin };
  if (o.nav) {
    ADMIN_NAV.push([name, o.nav]);
    if (o.user) USER_NAV.push([name, o.nav]);
  }
}
// The pages of window.BLINDEXEC_PAGES (above) decide who may see them
// themselves; their links are in the menus already.
for (const x of EXTRA) for (const [n, fn] of Object.entries(x.pages || {})) PAGES[n] = { render: fn, admin: false };

function applyLang() {
  document.documentElement.lang = lang;
  document.getElementById('lang').value = lang;
  for (const n of document.querySelectorAll('[data-i18n]')) n.textContent = t(n.dataset.i18n);
}

async function route() {
  const parts = location.hash.replace(/^#\/?/, '').split('/').map((s) => { try { return decodeURIComponent(s); } catch { return s; } });
  const name = parts[0] || (isAdmin() ? 'catalog' : 'tools');
  const nav = document.getElementById('nav');
  nav.replaceChildren(...(isAdmin() ? ADMIN_NAV : USER_NAV).map(([r, k]) => {
    const a = link([r], t(k));
    if (r === name) a.className = 'active';
    return a;
  }));
  const page = el('div', { attrs: { id: 'page', 'data-page': name } });
  const rest = location.hash.replace(/^#\/?[^/]*\/?/, ''); // a route's query, undecoded
  document.getElementById('page').replaceWith(page);
  const admin = { catalog: true, plugin: true, import: true, mcp: true };
  if ((admin[name] || (PAGES[name] && PAGES[name].admin)) && !isAdmin()) {
    page.append(el('p', { class: 'error', text: t('forbidden') }));
    return page.setAttribute('data-ready', 'true');
  }
  const pages = {
    catalog: () => pageCatalog(page, rest), tools: () => pageTools(page, rest), plugin: () => pagePlugin(page, parts[1]),
    try: () => pageTry(page, parts[1]), import: () => pageImport(page), mcp: () => pageMCP(page),
    credentials: () => pageCredentials(page, parts[1]), activity: () => pageActivity(page, parts.slice(1).join('/')),
    quotas: () => pageQuotas(page, parts[1]),
    connections: () => pageConnections(page, parts[1]),
  };
  for (const [n, p] of Object.entries(PAGES)) pages[n] = () => p.render(page, parts, rest);
  await (pages[name] || pages[isAdmin() ? 'catalog' : 'tools'])();
  page.setAttribute('data-ready', 'true');
}

async function start() {
  applyLang();
  document.getElementById('lang').addEventListener('change', (e) => {
    lang = e.target.value;
    localStorage.setItem('blindexec.lang', lang);
    applyLang();
    if (session) route();
  });
  const r = await call('GET', '/console/api/session');
  if (!r.ok) {
    document.getElementById('signin').hidden = false;
    const err = new URLSearchParams(location.search).get('error');
    if (err === 'token_required' || err === 'token_invalid' || err === 'database_unavailable') {
      const box = document.getElementById('signin-error');
      box.textContent = t(err === 'database_unavailable' ? 'signin_database_unavailable' : err);
      box.hidden = false;
    }
    document.body.setAttribute('data-ready', 'signin');
    return;
  }
  session = r.data;
  document.getElementById('nav').hidden = false;
  document.getElementById('logout').hidden = false;
  window.addEventListener('hashchange', route);
  await route();
  document.body.setAttribute('data-ready', 'app');
}

// Every page's script has run (they register their pages and strings)
// when the document is parsed.
document.addEventListener('DOMContentLoaded', start);
