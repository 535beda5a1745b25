# Writes deploy/grafana/leafproxy.json (run from the repository root: python3 deploy/grafana/dashboard.py).
# Edit the panels here and re-run; service/deploy_test.go checks every query names an exported
# metric and every leafproxy_* metric has a panel.
import json
panels=[]
pid=[0]
y=[0]
def nid():
    pid[0]+=1; return pid[0]
def row(title):
    panels.append({"type":"row","title":title,"id":nid(),"collapsed":False,"gridPos":{"h":1,"w":24,"x":0,"y":y[0]},"panels":[]})
    y[0]+=1
x=[0]
def place(w,h):
    if x[0]+w>24:
        x[0]=0; y[0]+=h
    g={"h":h,"w":w,"x":x[0],"y":y[0]}
    x[0]+=w
    return g
def endrow(h):
    if x[0]>0:
        y[0]+=h; x[0]=0
DS={"type":"prometheus","uid":"${datasource}"}
def ts(title,targets,unit="short",w=8,h=8,desc="",stack=False):
    p={"type":"timeseries","title":title,"id":nid(),"datasource":DS,"gridPos":place(w,h),
       "fieldConfig":{"defaults":{"unit":unit,"custom":{"fillOpacity":10,"stacking":{"mode":"normal" if stack else "none"}}},"overrides":[]},
       "options":{"legend":{"displayMode":"table","placement":"bottom","calcs":["lastNotNull","max"]},"tooltip":{"mode":"multi"}},
       "targets":[{"datasource":DS,"expr":e,"legendFormat":l,"refId":chr(65+i)} for i,(e,l) in enumerate(targets)]}
    if desc: p["description"]=desc
    panels.append(p)
def stat(title,expr,legend,mapping=None,unit="short",w=4,h=4,desc="",thresholds=None):
    p={"type":"stat","title":title,"id":nid(),"datasource":DS,"gridPos":place(w,h),
       "fieldConfig":{"defaults":{"unit":unit,"mappings":mapping or [],"thresholds":{"mode":"absolute","steps":thresholds or [{"color":"green","value":None}]}},"overrides":[]},
       "options":{"colorMode":"background","graphMode":"none","reduceOptions":{"calcs":["lastNotNull"],"fields":"","values":False},"textMode":"value_and_name"},
       "targets":[{"datasource":DS,"expr":expr,"legendFormat":legend,"refId":"A"}]}
    if desc: p["description"]=desc
    panels.append(p)
I='instance=~"$instance"'
updown=[{"type":"value","options":{"0":{"text":"DOWN","color":"red","index":0},"1":{"text":"UP","color":"green","index":1}}}]
fenced=[{"type":"value","options":{"0":{"text":"issuing","color":"green","index":0},"1":{"text":"FENCED","color":"red","index":1}}}]
red_at_1=[{"color":"green","value":None},{"color":"red","value":1}]
red_at_0=[{"color":"red","value":None},{"color":"green","value":1}]
row("Health: what to act on")
stat("Backend",f"leafproxy_backend_up{{{I}}}","{{instance}}",updown,thresholds=red_at_0,desc="1 if the backend accepted backend.user's login at the last health probe")
stat("Allocation store",f"leafproxy_store_up{{{I}}}","{{instance}}",updown,thresholds=red_at_0,desc="1 if the store answered a read of leaf_alloc at the last health probe")
stat("Snowflake generators",f"max by (instance, layout) (leafproxy_snowflake_layout_fenced{{{I}}})","{{instance}} {{layout}}",fenced,thresholds=red_at_1,desc="1 while a layout's generator issues nothing (no worker id, lease not renewed, or lost)")
stat("Shortest runway",f"min by (instance) (leafproxy_sequence_exhausted_timestamp_seconds{{{I}}} - time())","{{instance}}",unit="s",thresholds=[{"color":"red","value":None},{"color":"orange","value":2592000},{"color":"green","value":31536000}],desc="Time until the first tag runs out of IDs at its current rate (README, Runway)")
stat("Store moved back (repairs, 1h)",f"sum by (instance) (increase(leafproxy_segment_repairs_total{{{I}}}[1h]))","{{instance}}",thresholds=red_at_1,desc="leaf_alloc.max_id found below IDs already issued and pushed past them: investigate any")
stat("Last reload",f"leafproxy_config_last_reload_successful{{{I}}}","{{instance}}",[{"type":"value","options":{"0":{"text":"REFUSED","color":"red","index":0},"1":{"text":"ok","color":"green","index":1}}}],thresholds=red_at_0)
endrow(4)
row("Traffic")
ts("Commands / s",[(f"sum by (command) (rate(leafproxy_commands_total{{{I}}}[$__rate_interval]))","{{command}}")],"reqps",stack=True)
ts("Statements the proxy carried out / s",[(f"sum by (kind) (rate(leafproxy_statements_total{{{I}}}[$__rate_interval]))","{{kind}}")],"reqps",stack=True)
ts("Errors sent to clients / s, by MySQL code",[(f"sum by (code) (rate(leafproxy_client_errors_total{{{I}}}[$__rate_interval]))","{{code}}")],"reqps",desc="4091 unknown sequence, 1105 no ID (store down / fenced), 1429 backend unreachable, 1045/1129 refused logins, 1062 duplicate key, ...")
ts("Relay latency (backend answers)",[(f"histogram_quantile(0.5, sum by (le) (rate(leafproxy_relay_duration_seconds_bucket{{{I}}}[$__rate_interval])))","p50"),(f"histogram_quantile(0.99, sum by (le) (rate(leafproxy_relay_duration_seconds_bucket{{{I}}}[$__rate_interval])))","p99"),(f"histogram_quantile(0.999, sum by (le) (rate(leafproxy_relay_duration_seconds_bucket{{{I}}}[$__rate_interval])))","p999")],"s")
ts("NEXTVAL latency (answered by the proxy)",[(f"histogram_quantile(0.5, sum by (le) (rate(leafproxy_nextval_duration_seconds_bucket{{{I}}}[$__rate_interval])))","p50"),(f"histogram_quantile(0.99, sum by (le) (rate(leafproxy_nextval_duration_seconds_bucket{{{I}}}[$__rate_interval])))","p99"),(f"histogram_quantile(0.999, sum by (le) (rate(leafproxy_nextval_duration_seconds_bucket{{{I}}}[$__rate_interval])))","p999")],"s")
ts("Statements sent again to recover / s",[(f"sum by (reason) (rate(leafproxy_engine_retries_total{{{I}}}[$__rate_interval]))","{{reason}}")],"reqps",desc="duplicate_key: a generated key met a key written around the proxy (README, Write paths)")
endrow(8)
row("Sequences")
ts("IDs issued / s, by tag (SQL)",[(f"sum by (tag) (rate(leafproxy_ids_issued_total{{{I}}}[$__rate_interval]))","{{tag}}")],"short",stack=True)
ts("Runway: days left, by tag",[(f"min by (tag) (leafproxy_sequence_exhausted_timestamp_seconds{{{I}}} - time()) / 86400","{{tag}}")],"d",desc="When each tag runs out of IDs at the rate leaf_alloc.max_id moved over the last hour (a snowflake tag: when its time bits end)")
ts("IDs left, by tag",[(f"min by (tag) (leafproxy_sequence_ids_left{{{I}}})","{{tag}}")],"short")
ts("Key column range left, by tag",[(f"min by (tag) (leafproxy_sequence_range_left_ratio{{{I}}})","{{tag}}")],"percentunit",desc="Share of the smallest key column's range still ahead of the tag (warnings under 10% and 1%; README, The end of a key column)")
ts("Tags at the end of their key column",[(f"max by (tag) (leafproxy_sequence_at_end{{{I}}})","{{tag}}")],"none",desc="1 while every key a tag would generate is past the end of the column it fills: its inserts get 167 (widen the column)")
ts("Store: max_id growth / s, by tag (all proxies)",[(f"max by (tag) (leafproxy_sequence_ids_per_second{{{I}}})","{{tag}}")],"short")
ts("Segment: IDs left in the current segment",[(f"leafproxy_segment_remaining_ids{{{I}}}","{{instance}} {{tag}}")],"short")
ts("Segment: next buffered (1) / step",[(f"leafproxy_segment_next_ready{{{I}}}","ready {{instance}} {{tag}}"),(f"leafproxy_segment_step{{{I}}}","step {{instance}} {{tag}}")],"short")
ts("Segment fetches / errors / write conflicts / refusals / repairs (per minute)",[(f"sum by (tag) (rate(leafproxy_segment_fetches_total{{{I}}}[$__rate_interval])) * 60","fetches {{tag}}"),(f"sum by (tag) (rate(leafproxy_segment_fetch_errors_total{{{I}}}[$__rate_interval])) * 60","errors {{tag}}"),(f"sum by (tag) (rate(leafproxy_segment_fetch_conflicts_total{{{I}}}[$__rate_interval])) * 60","write conflicts {{tag}}"),(f"sum by (tag) (rate(leafproxy_segment_refused_total{{{I}}}[$__rate_interval])) * 60","refused {{tag}}"),(f"sum by (tag) (rate(leafproxy_segment_repairs_total{{{I}}}[$__rate_interval])) * 60","repairs {{tag}}")],"short")
ts("Allocation store: node in use (1), failovers and failbacks (per hour)",[(f"leafproxy_store_node_in_use{{{I}}} == 1","in use: {{addr}} (position {{position}}) {{instance}}"),(f"sum by (instance) (increase(leafproxy_store_failovers_total{{{I}}}[1h]))","failovers {{instance}}"),(f"sum by (instance) (increase(leafproxy_store_failbacks_total{{{I}}}[1h]))","failbacks {{instance}}")],"short")
ts("Snowflake worker ids",[(f"leafproxy_snowflake_layout_worker_id{{{I}}}","{{instance}} {{layout}}"),(f"leafproxy_snowflake_worker_id{{{I}}}","{{instance}} snowflake section")],"none")
ts("Snowflake fenced / lease lost",[(f"leafproxy_snowflake_layout_fenced{{{I}}}","fenced {{instance}} {{layout}}"),(f"leafproxy_snowflake_fenced{{{I}}}","fenced {{instance}} snowflake section"),(f"leafproxy_snowflake_lease_lost{{{I}}}","lease lost {{instance}}")],"none")
endrow(8)
row("Sessions and logins")
ts("Client sessions",[(f"leafproxy_client_sessions{{{I}}}","open {{instance}}"),(f"leafproxy_event_loop_sessions{{{I}}}","on event loops {{instance}}")],"short")
ts("Connections accepted, loop moves and handoffs / s",[(f"rate(leafproxy_client_sessions_accepted_total{{{I}}}[$__rate_interval])","accepted {{instance}}"),(f"rate(leafproxy_event_loop_moves_total{{{I}}}[$__rate_interval])","moves {{instance}}"),(f"rate(leafproxy_event_loop_handoffs_total{{{I}}}[$__rate_interval])","handoffs {{instance}}")],"reqps")
ts("Logins / s",[(f"rate(leafproxy_login_successes_total{{{I}}}[$__rate_interval])","ok {{instance}}"),(f"rate(leafproxy_login_failures_total{{{I}}}[$__rate_interval])","failed {{instance}}"),(f"rate(leafproxy_login_throttled_total{{{I}}}[$__rate_interval])","throttled (1129) {{instance}}"),(f"rate(leafproxy_handshakes_dropped_total{{{I}}}[$__rate_interval])","handshakes dropped {{instance}}")],"reqps")
ts("Client hosts blocked, connections not logged in yet",[(f"leafproxy_login_blocked_hosts{{{I}}}","blocked hosts {{instance}}"),(f"leafproxy_handshakes_pending{{{I}}}","handshakes {{state}} {{instance}}")],"short",w=8)
ts("Configuration reloads",[(f"sum by (result) (increase(leafproxy_config_reloads_total{{{I}}}[$__range]))","{{result}}")],"short",w=8)
ts("Event loops",[(f"leafproxy_event_loops{{{I}}}","{{instance}}")],"short",w=8)
ts("Configuration age",[(f"time() - leafproxy_config_last_reload_success_timestamp_seconds{{{I}}}","in force since {{instance}}"),(f"time() - leafproxy_config_last_reload_timestamp_seconds{{{I}}}","last reload attempt {{instance}}")],"s",w=8,desc="Since the configuration in force was applied (start or reload) and since the last reload attempt; an attempt newer than the applied one was refused")
endrow(8)
row("HTTP ID API")
ts("Requests / s, by endpoint and status",[(f"sum by (endpoint, code) (rate(leafproxy_id_api_requests_total{{{I}}}[$__rate_interval]))","{{endpoint}} {{code}}")],"reqps",desc="401 no valid token, 403 tag not allowed, 404 unknown sequence, 503 no ID now")
ts("IDs handed out / s, by tag",[(f"sum by (tag) (rate(leafproxy_id_api_ids_total{{{I}}}[$__rate_interval]))","{{tag}}")],"short",stack=True)
ts("Latency",[(f"histogram_quantile(0.5, sum by (le, endpoint) (rate(leafproxy_id_api_request_duration_seconds_bucket{{{I}}}[$__rate_interval])))","p50 {{endpoint}}"),(f"histogram_quantile(0.99, sum by (le, endpoint) (rate(leafproxy_id_api_request_duration_seconds_bucket{{{I}}}[$__rate_interval])))","p99 {{endpoint}}")],"s")
endrow(8)
row("Process")
ts("CPU",[(f"rate(process_cpu_seconds_total{{{I}}}[$__rate_interval])","{{instance}}")],"percentunit")
ts("Resident memory / Go heap",[(f"process_resident_memory_bytes{{{I}}}","rss {{instance}}"),(f"go_memstats_heap_inuse_bytes{{{I}}}","heap {{instance}}")],"bytes")
ts("Goroutines / open fds",[(f"go_goroutines{{{I}}}","goroutines {{instance}}"),(f"process_open_fds{{{I}}}","fds {{instance}}")],"short")
endrow(8)
d={"__inputs":[],"annotations":{"list":[]},"description":"leafproxy: health, traffic, sequences and runway, sessions and logins, the HTTP ID API. Metric reference: README, Metrics, status page and health.",
 "editable":True,"graphTooltip":1,"id":None,"links":[],"panels":panels,"refresh":"30s","schemaVersion":39,"tags":["leafproxy","mysql"],
 "templating":{"list":[
  {"name":"datasource","type":"datasource","query":"prometheus","label":"Prometheus","current":{},"hide":0,"refresh":1},
  {"name":"instance","type":"query","datasource":DS,"query":{"query":"label_values(leafproxy_build_info, instance)","refId":"instance"},"definition":"label_values(leafproxy_build_info, instance)","includeAll":True,"multi":True,"allValue":".*","current":{},"refresh":2,"label":"Proxy","hide":0,"sort":1}
 ]},
 "time":{"from":"now-6h","to":"now"},"timepicker":{},"timezone":"","title":"leafproxy","uid":"leafproxy","version":1}
json.dump(d,open("deploy/grafana/leafproxy.json","w"),indent=2)
print(len(panels))
