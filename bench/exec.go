package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/engine"
)

// companyBody is what the loopback upstream of seed 001's
// search_company_basic answers.
var companyBody = []byte(`{"Status":"200","Result":[{"Name":"北京字节跳动科技有限公司","OperName":"张利东","StartDate":"2012-03-09"}]}`)

// companyUpstream serves companyBody to requests carrying a Token header.
func companyUpstream() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Token") == "" {
			http.Error(w, "no token", http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(companyBody)
	}))
}

// companyPlugin is seed 001's search_company_basic against base.
func companyPlugin(base string) string {
	return `{"name":"search_company_basic","description":"search","parameters":{"type":"object","required":["keyword"],
	"properties":{"keyword":{"type":"string"},"page_index":{"type":"integer","default":1}}},
	"execution":{"method":"GET","base_url":"` + base + `/ECIV4/Search","param_placement":"query"},
	"auth_config":{"type":"api_key","mapping":[{"source":"QCC_KEY","target":"Token","location":"header"}]}}`
}

// benchExec compares one GET with a query argument and an API key header:
// direct net/http, the in-process executor (validation, credentials,
// records on) and POST /v1/execute over HTTP.
func benchExec(ctx context.Context, o benchOpts) error {
	up := companyUpstream()
	defer up.Close()

	e, err := newEnv(ctx, nil)
	if err != nil {
		return err
	}
	defer e.close()
	st, creds, ex := e.st, e.creds, e.ex
	doc := companyPlugin(up.URL)
	p, err := e.addCompanyPlugin(ctx, up.URL, 7, "sk-bench-0123456789")
	if err != nil {
		return err
	}
	srv := httptest.NewServer((&api.Server{Store: st, Creds: creds, Executor: ex, ServiceToken: "bench-service",
		Changes: e.changes}).Handler())
	defer srv.Close()

	direct := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	directURL := up.URL + "/ECIV4/Search?keyword=" + "%E5%AD%97%E8%8A%82%E8%B7%B3%E5%8A%A8"
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	execStored := `{"name":"search_company_basic","arguments":{"keyword":"字节跳动"},"user_id":7}`
	execInline := `{"plugin":` + doc + `,"arguments":{"keyword":"字节跳动"},"credentials":{"QCC_KEY":"sk-bench-0123456789"}}`
	args := []byte(`{"keyword":"字节跳动"}`)
	payload := map[string]string{"QCC_KEY": "sk-bench-0123456789"}
	execute := func(ctx context.Context, call engine.Call) error {
		res, err := ex.Execute(ctx, call)
		if err != nil {
			return err
		}
		if !res.OK {
			return fmt.Errorf("call failed: %s", res.Error.Message)
		}
		return nil
	}
	post := func(ctx context.Context, body string) error {
		req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/v1/execute", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer bench-service")
		return drain(client.Do(req))
	}

	// relay is the least any engine over HTTP can cost: a handler that
	// makes the direct call and copies the answer back, with no engine.
	relayClient := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	relay := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		req, _ := http.NewRequestWithContext(r.Context(), "GET", directURL, nil)
		req.Header.Set("Token", "sk-bench-0123456789")
		resp, err := relayClient.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.Header().Set("Content-Type", "application/json")
		io.Copy(w, resp.Body)
	}))
	defer relay.Close()

	subjects := []subject{
		{name: "direct net/http", call: func(ctx context.Context) error {
			req, _ := http.NewRequestWithContext(ctx, "GET", directURL, nil)
			req.Header.Set("Token", "sk-bench-0123456789")
			return drain(direct.Do(req))
		}},
		{name: "executor, payload credentials", call: func(ctx context.Context) error {
			return execute(ctx, engine.Call{Plugin: p, Arguments: args, Credentials: payload})
		}},
		{name: "executor, stored credentials", call: func(ctx context.Context) error {
			return execute(ctx, engine.Call{Plugin: p, Arguments: args, UserID: 7})
		}},
		{name: "bare relay: a handler making the direct call", call: func(ctx context.Context) error {
			req, _ := http.NewRequestWithContext(ctx, "POST", relay.URL, strings.NewReader(execStored))
			return drain(client.Do(req))
		}},
		{name: "/v1/execute, inline plugin+credentials", call: func(ctx context.Context) error { return post(ctx, execInline) }},
		{name: "/v1/execute, catalog+stored credentials", call: func(ctx context.Context) error { return post(ctx, execStored) }},
	}
	f, err := measure(ctx, subjects, o)
	if err != nil {
		return err
	}
	printTable("== blind execution: GET with a query argument and an API key (loopback upstream)", subjects, f, o)
	return nil
}
