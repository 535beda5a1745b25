# Writes leafproxy-alerts.test.yml from the cases below (run in this directory: python3 tests.py; needs PyYAML).
# The expected annotations are the rules' own, with the labels filled in.
import yaml,re
rules={r['alert']:r for r in yaml.safe_load(open('leafproxy-alerts.yml'))['groups'][0]['rules']}
def ann(alert, labels):
    out={}
    for k,v in rules[alert]['annotations'].items():
        out[k]=re.sub(r'\{\{ \$labels\.(\w+) \}\}', lambda m: labels[m.group(1)], v)
    return out
I={'instance':'p1:9104','job':'leafproxy'}
def lab(extra=None, keep_job=True):
    d=dict(I) if keep_job else {'instance':I['instance']}
    d.update(extra or {})
    return d
def sel(name, extra=None):
    l=dict(I); l.update(extra or {})
    return name+'{'+','.join(f'{k}="{v}"' for k,v in sorted(l.items()))+'}'
tests=[]
def case(series, alert, t, exp_labels, also_quiet=None, name=None):
    # exp_labels None: expect no alert
    at=[{'eval_time':t,'alertname':alert,'exp_alerts':[] if exp_labels is None else [{'exp_labels':dict(exp_labels, severity=rules[alert]['labels']['severity']),'exp_annotations':ann(alert, exp_labels)}]}]
    if also_quiet:
        for qt in also_quiet:
            at.insert(0,{'eval_time':qt,'alertname':alert,'exp_alerts':[]})
    tests.append({'name':name or alert,'interval':'1m','input_series':[{'series':s,'values':v} for s,v in series],'alert_rule_test':at})
# backend / store down: fires after for: 1m of 0
case([(sel('leafproxy_backend_up'),'1 1 0 0 0 0')],'LeafproxyBackendDown','5m',lab(),also_quiet=['2m'])
case([(sel('leafproxy_store_up'),'1 1 0 0 0 0')],'LeafproxyStoreDown','5m',lab(),also_quiet=['2m'])
case([(sel('leafproxy_store_up'),'1x10')],'LeafproxyStoreDown','10m',None,name='LeafproxyStoreDown quiet while up')
case([(sel('leafproxy_segment_fetch_errors_total',{'tag':'order'}),'0 0 1 2 3 4 5 6 7 8 9 10 11')],'LeafproxySegmentFetchErrors','12m',lab({'tag':'order'},keep_job=False),also_quiet=['3m'])
case([(sel('leafproxy_store_failovers_total'),'0 0 0 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1')],'LeafproxyStoreFailedOver','5m',lab(keep_job=False),also_quiet=['2m','18m'])
case([(sel('leafproxy_segment_fetch_conflicts_total',{'tag':'order'}),'0+40x20'),(sel('leafproxy_segment_fetch_errors_total',{'tag':'order'}),'0x20')],'LeafproxySegmentFetchErrors','15m',None,name='LeafproxySegmentFetchErrors quiet on write conflicts')
case([(sel('leafproxy_snowflake_layout_fenced',{'layout':'default'}),'0 0 1 1 1')],'LeafproxySnowflakeFenced','4m',lab({'layout':'default'}),also_quiet=['2m'])
case([(sel('leafproxy_snowflake_lease_lost'),'0 0 1')],'LeafproxySnowflakeLeaseLost','2m',lab(),also_quiet=['1m'])
# runway: time() starts at 0; 20 days from 0 -> fires after for: 1h; 60 days does not
case([(sel('leafproxy_sequence_exhausted_timestamp_seconds',{'tag':'order'}),'1728000x90'),(sel('leafproxy_sequence_exhausted_timestamp_seconds',{'tag':'msg'}),'5184000x90')],'LeafproxyRunwayLow','70m',lab({'tag':'order'}),also_quiet=['30m'])
case([(sel('leafproxy_sequence_exhausted_timestamp_seconds',{'tag':'order'}),'432000x30'),(sel('leafproxy_sequence_exhausted_timestamp_seconds',{'tag':'msg'}),'1728000x30')],'LeafproxyRunwayCritical','20m',lab({'tag':'order'}),also_quiet=['5m'])
case([(sel('leafproxy_sequence_range_left_ratio',{'tag':'order'}),'0.2 0.2 0.05x20'),(sel('leafproxy_sequence_range_left_ratio',{'tag':'msg'}),'0.5x22')],'LeafproxyKeyColumnNearEnd','15m',lab({'tag':'order'}),also_quiet=['5m'])
case([(sel('leafproxy_sequence_at_end',{'tag':'order'}),'0 0 1 1'),(sel('leafproxy_sequence_at_end',{'tag':'msg'}),'0x3')],'LeafproxyKeyColumnAtEnd','3m',lab({'tag':'order'}),also_quiet=['1m'])
case([(sel('leafproxy_segment_repairs_total',{'tag':'order'}),'0 0 0 1 1'),(sel('leafproxy_segment_refused_total',{'tag':'order'}),'0 0 0 0 0')],'LeafproxyStoreMovedBack','4m',lab({'tag':'order'},keep_job=False),also_quiet=['2m'])
case([(sel('leafproxy_segment_repairs_total',{'tag':'order'}),'0 0 0 0 0'),(sel('leafproxy_segment_refused_total',{'tag':'order'}),'0 0 0 2 2')],'LeafproxyStoreMovedBack','4m',lab({'tag':'order'},keep_job=False),name='LeafproxyStoreMovedBack on a refused segment')
case([(sel('leafproxy_engine_retries_total',{'reason':'duplicate_key'}),'0 0 0 3 3'),(sel('leafproxy_engine_retries_total',{'reason':'numbered_recount'}),'0 5 10 15 20')],'LeafproxyDuplicateKeyRetries','4m',lab(keep_job=False),also_quiet=['2m'])
case([(sel('leafproxy_engine_retries_total',{'reason':'duplicate_key'}),'0x10'),(sel('leafproxy_engine_retries_total',{'reason':'numbered_recount'}),'0+5x10')],'LeafproxyDuplicateKeyRetries','10m',None,name='LeafproxyDuplicateKeyRetries ignores recounts')
# error rate: 100 commands/min, 10 errors/min = 10%
case([(sel('leafproxy_commands_total',{'command':'query'}),'0+6000x30'),(sel('leafproxy_client_errors_total',{'code':'1062'}),'0+600x30')],'LeafproxyClientErrorRateHigh','20m',lab(keep_job=False),also_quiet=['10m'])
case([(sel('leafproxy_commands_total',{'command':'query'}),'0+6000x30'),(sel('leafproxy_client_errors_total',{'code':'1062'}),'0+60x30')],'LeafproxyClientErrorRateHigh','20m',None,name='LeafproxyClientErrorRateHigh quiet at 1%')
case([(sel('leafproxy_client_errors_total',{'code':'1105'}),'0 0 0 5 10 15 20 25')],'LeafproxyIDsUnavailable','7m',lab(keep_job=False),also_quiet=['3m'])
case([(sel('leafproxy_id_api_requests_total',{'endpoint':'segment','code':'401'}),'0+120x30'),(sel('leafproxy_id_api_requests_total',{'endpoint':'segment','code':'200'}),'0+6000x30')],'LeafproxyIDAPIRefusals','20m',lab(keep_job=False),also_quiet=['8m'])
case([(sel('leafproxy_id_api_requests_total',{'endpoint':'segment','code':'503'}),'0 0 1 2 3 4 5 6 7 8 9 10')],'LeafproxyIDAPIErrors','10m',lab(keep_job=False),also_quiet=['2m'])
case([(sel('leafproxy_login_throttled_total'),'0 0 1 2 3 4 5 6 7 8 9'),(sel('leafproxy_login_blocked_hosts'),'0x10')],'LeafproxyLoginThrottling','9m',lab(keep_job=False),also_quiet=['3m'])
case([(sel('leafproxy_login_throttled_total'),'0x10'),(sel('leafproxy_login_blocked_hosts'),'0 0 1 1 1 1 1 1 1 1')],'LeafproxyLoginThrottling','9m',lab(),name='LeafproxyLoginThrottling on a blocked host')
case([(sel('leafproxy_handshakes_dropped_total'),'0+10x30')],'LeafproxyHandshakesDropped','25m',lab(keep_job=False),also_quiet=['5m'])
case([(sel('leafproxy_config_last_reload_successful'),'1 1 0 0 0 0 0 0 0 0')],'LeafproxyConfigReloadRefused','9m',lab(),also_quiet=['4m'])
doc={'rule_files':['leafproxy-alerts.yml'],'evaluation_interval':'1m','tests':tests}
hdr="# Made by tests.py (edit the cases there). promtool test rules leafproxy-alerts.test.yml: each alert fires on the series it is for (and\n# stays quiet before its `for:` and on look-alike series). Generated values: time() starts at 0.\n"
open('leafproxy-alerts.test.yml','w').write(hdr+yaml.safe_dump(doc,sort_keys=False,width=200))
