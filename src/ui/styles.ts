/**
 * The dashboard's one stylesheet, served by the app at /ui/style.css (no CDN, no build). Calm and dense:
 * system fonts, a neutral palette, color only where it carries meaning (the state badges).
 */
export const STYLESHEET = `
:root {
  --bg: #f6f7f9; --panel: #fff; --ink: #1d2330; --muted: #667085; --line: #e3e6ec; --line-strong: #cfd4dc;
  --accent: #2f5bd3; --accent-ink: #fff; --head: #151a24;
  --ok-bg: #e5f4ea; --ok-ink: #1c6b3a; --warn-bg: #fdf1d8; --warn-ink: #8a5a00; --bad-bg: #fbe6e6; --bad-ink: #a32222;
  --info-bg: #e6eefc; --info-ink: #24489e; --neutral-bg: #eef0f3; --neutral-ink: #4a5363; --dup-bg: #efeafb; --dup-ink: #5b3fa6;
  --mono: ui-monospace, SFMono-Regular, "SF Mono", Menlo, Consolas, "Liberation Mono", monospace;
}
* { box-sizing: border-box; }
html { font-size: 14px; }
body { margin: 0; background: var(--bg); color: var(--ink); line-height: 1.45;
  font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
a { color: var(--accent); text-decoration: none; }
a:hover { text-decoration: underline; }
code, .mono { font-family: var(--mono); font-size: 0.92em; }
code.id { white-space: nowrap; }
pre.body { font-family: var(--mono); font-size: 12.5px; margin: 0; padding: 12px 14px; white-space: pre-wrap; word-break: break-all; max-height: 420px; overflow: auto; }
.muted { color: var(--muted); }
.err { color: var(--bad-ink); }
.nowrap { white-space: nowrap; }

header.top { background: var(--head); color: #e8ebf1; }
header.top .bar { max-width: 1480px; margin: 0 auto; padding: 0 20px; display: flex; align-items: center; gap: 24px; height: 48px; }
header.top .brand { font-weight: 650; letter-spacing: 0.2px; color: #fff; font-size: 15px; }
header.top .brand span { color: #8fa8e8; }
header.top nav { display: flex; gap: 2px; flex: 1; }
header.top nav a { color: #c3c9d5; padding: 6px 10px; border-radius: 6px; }
header.top nav a:hover { background: #232a38; color: #fff; text-decoration: none; }
header.top nav a.here { background: #2a3344; color: #fff; }
header.top .count { display: inline-block; min-width: 18px; padding: 0 6px; margin-left: 6px; border-radius: 9px;
  background: #d99a1c; color: #1b1300; font-size: 11px; font-weight: 650; text-align: center; line-height: 18px; }
header.top .who { display: flex; align-items: center; gap: 10px; color: #9aa3b2; font-size: 13px; }
header.top .who form { margin: 0; }
header.top .who button { background: transparent; border: 1px solid #3a4354; color: #c3c9d5; padding: 3px 10px; }
header.top .who button:hover { background: #232a38; color: #fff; }
header.top .jump input { background: #232a38; border: 1px solid #3a4354; color: #e8ebf1; width: 200px; font-family: var(--mono); font-size: 12px; }

main { max-width: 1480px; margin: 0 auto; padding: 20px; }
h1 { font-size: 20px; font-weight: 620; margin: 4px 0 4px; display: flex; align-items: center; gap: 10px; flex-wrap: wrap; }
h2 { font-size: 14px; font-weight: 620; margin: 26px 0 8px; color: #333b4a; text-transform: uppercase; letter-spacing: 0.5px; }
p.lede { margin: 0 0 16px; color: var(--muted); max-width: 80ch; }

.flash { padding: 10px 14px; border-radius: 8px; margin-bottom: 16px; border: 1px solid; }
.flash.ok { background: var(--ok-bg); color: var(--ok-ink); border-color: #bfe3cb; }
.flash.error { background: var(--bad-bg); color: var(--bad-ink); border-color: #f1c4c4; }

.panel { background: var(--panel); border: 1px solid var(--line); border-radius: 10px; }
.panel.pad, .panel > .pad { padding: 14px 16px; }
.callout { background: #fffaf0; border: 1px solid #f0dcae; border-radius: 10px; padding: 12px 16px; margin: 12px 0; }
.callout strong { color: var(--warn-ink); }

table { width: 100%; border-collapse: collapse; background: var(--panel); }
.panel { overflow-x: auto; }
td.why { min-width: 26ch; max-width: 52ch; }
td.why .err { font-size: 12px; color: var(--bad-ink); margin-top: 2px; line-height: 1.35; }
th, td { text-align: left; padding: 8px 10px; border-bottom: 1px solid var(--line); vertical-align: middle; }
th { font-weight: 600; color: var(--muted); font-size: 12px; background: #fafbfc; white-space: nowrap; }
tr:last-child td, tr:last-child th { border-bottom: 0; }
table.kv th { width: 1%; background: #fafbfc; }
table.kv td code { word-break: break-all; }
tbody tr:hover td { background: #fafbfd; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
td.wrap { white-space: normal; word-break: break-word; max-width: 44ch; }
td.err { color: var(--bad-ink); font-size: 13px; }
.empty { padding: 28px; text-align: center; color: var(--muted); }
svg.icon { width: 16px; height: 16px; vertical-align: -3px; }

.badge { display: inline-block; padding: 1px 8px; border-radius: 999px; font-size: 12px; font-weight: 560;
  white-space: nowrap; line-height: 18px; border: 1px solid transparent; }
.badge.ok { background: var(--ok-bg); color: var(--ok-ink); border-color: #c9e8d3; }
.badge.warn { background: var(--warn-bg); color: var(--warn-ink); border-color: #f2deb0; }
.badge.bad { background: var(--bad-bg); color: var(--bad-ink); border-color: #f3cccc; }
.badge.info { background: var(--info-bg); color: var(--info-ink); border-color: #cfdcf7; }
.badge.dup { background: var(--dup-bg); color: var(--dup-ink); border-color: #ddd3f5; }
.badge.neutral { background: var(--neutral-bg); color: var(--neutral-ink); border-color: #dfe2e8; }
h1 .badge { font-size: 13px; padding: 2px 10px; }

dl.facts { display: grid; grid-template-columns: max-content 1fr max-content 1fr; gap: 6px 18px; margin: 0; padding: 14px 16px; }
dl.facts dt { color: var(--muted); white-space: nowrap; }
dl.facts dd { margin: 0; min-width: 0; overflow-wrap: anywhere; }

form { margin: 0; }
input, select, textarea, button { font: inherit; font-size: 13px; }
input, select { height: 30px; }
input, select, textarea { border: 1px solid var(--line-strong); border-radius: 6px; padding: 5px 8px; background: #fff; color: var(--ink); }
input:focus, select:focus, textarea:focus { outline: 2px solid #b9c9f3; border-color: var(--accent); }
textarea { width: 100%; min-height: 54px; resize: vertical; }
form.tried { display: grid; gap: 8px; justify-items: start; }
form.tried textarea { font-family: var(--mono); }
button { border: 1px solid var(--line-strong); background: #fff; color: var(--ink); border-radius: 6px; padding: 5px 12px; cursor: pointer; white-space: nowrap; }
button:hover { background: #f2f4f7; }
button.primary { background: var(--accent); border-color: var(--accent); color: var(--accent-ink); }
button.primary:hover { background: #264cb5; }
button.danger { color: var(--bad-ink); border-color: #ecc3c3; }
button.danger:hover { background: var(--bad-bg); }
label { display: block; font-size: 12px; color: var(--muted); margin: 0 0 3px; }

.filters { display: flex; gap: 10px; align-items: flex-end; flex-wrap: wrap; margin: 0 0 14px; }
.filters .field input { width: 220px; }
.filters .field.wide input { width: 360px; font-family: var(--mono); }
.tabs { display: flex; gap: 6px; margin: 0 0 14px; flex-wrap: wrap; }
.tabs a { padding: 4px 12px; border-radius: 999px; border: 1px solid var(--line-strong); color: var(--ink); background: #fff; font-size: 13px; }
.tabs a.here { background: var(--ink); color: #fff; border-color: var(--ink); }
.tabs a:hover { text-decoration: none; border-color: var(--muted); }
.tabs .n { color: var(--muted); margin-left: 4px; font-variant-numeric: tabular-nums; }
.tabs a.here .n { color: #c9cfda; }
.pager { display: flex; gap: 10px; justify-content: flex-end; margin-top: 10px; }

form.inline { display: flex; gap: 6px; align-items: center; flex-wrap: nowrap; }
form.inline input[name=note] { width: 170px; }
form.inline input[name=reference] { width: 110px; }
/* In the attention queue the buttons wrap under the note and reference: in one line, with the other columns, the
   table was wider than a 1280 px window, and a row's decisions were reached by scrolling sideways. */
td.decide { min-width: 290px; }
td.decide form.inline { flex-wrap: wrap; }
td.decide form.inline input[name=note] { flex: 1 1 150px; }
/* An owner is a name a person typed, up to 100 characters: a long one is cut, whole in its title. */
.owner { display: inline-block; max-width: 14ch; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; vertical-align: bottom; }

.decisions { display: grid; grid-template-columns: repeat(auto-fill, minmax(280px, 1fr)); gap: 12px; }
.decision { background: var(--panel); border: 1px solid var(--line); border-radius: 10px; padding: 12px 14px; display: flex; flex-direction: column; gap: 8px; }
.decision h3 { margin: 0; font-size: 14px; font-weight: 620; text-transform: capitalize; }
.decision p { margin: 0; color: var(--muted); font-size: 12.5px; }
.decision .row { display: flex; justify-content: flex-end; }

.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(180px, 1fr)); gap: 12px; margin-bottom: 8px; }
.card { background: var(--panel); border: 1px solid var(--line); border-radius: 10px; padding: 12px 16px; }
.card .v { font-size: 24px; font-weight: 620; font-variant-numeric: tabular-nums; }
.card .k { color: var(--muted); font-size: 12px; }
.card.warn .v { color: var(--warn-ink); }
.grid2 { display: grid; grid-template-columns: repeat(auto-fit, minmax(320px, 1fr)); gap: 16px; }

/* Charts: inline SVG scaled to their panel; text in the page's font. */
.chart-row { display: grid; grid-template-columns: minmax(0, 1fr) 300px; gap: 12px; align-items: start; }
@media (max-width: 900px) { .chart-row { grid-template-columns: minmax(0, 1fr); } }
svg.chart { display: block; width: 100%; height: auto; font-size: 11px; font-family: inherit; }
svg.chart text { fill: var(--muted); }
svg.chart text.none { font-size: 13px; }
svg.swatch { width: 10px; height: 10px; vertical-align: baseline; }
.numbers table { font-size: 13px; }
.numbers details { border-top: 1px solid var(--line); }
.numbers summary { padding: 8px 10px; cursor: pointer; color: var(--accent); font-size: 12px; }
.numbers details table { max-height: none; }
.card a { color: inherit; display: block; }
.card a:hover { text-decoration: none; }

fieldset.states { border: 1px solid var(--line-strong); border-radius: 6px; padding: 4px 8px 6px; margin: 0; display: flex; flex-wrap: wrap; gap: 2px 10px; max-width: 560px; }
fieldset.states legend { font-size: 12px; color: var(--muted); padding: 0 4px; }
label.check { display: inline-flex; align-items: center; gap: 4px; font-size: 13px; color: var(--ink); margin: 0; white-space: nowrap; }
label.check input { width: auto; height: auto; padding: 0; margin: 0; }
label.attention { align-self: center; }
.bulk { margin: 0 0 14px; }
.bulk h3 { margin: 0 0 6px; font-size: 13px; font-weight: 620; }
.bulk p { margin: 0; }
a.button { display: inline-block; border: 1px solid var(--line-strong); background: #fff; color: var(--ink); border-radius: 6px; padding: 4px 12px; font-size: 13px; }
a.button:hover { background: #f2f4f7; text-decoration: none; }
form.confirm { max-width: 640px; margin-top: 16px; }
form.confirm .row { align-items: center; gap: 12px; }

.login { max-width: 380px; margin: 12vh auto; }
.login .panel { padding: 22px 24px; }
.login h1 { margin-bottom: 12px; display: block; font-size: 22px; }
.login h1 span { color: var(--accent); }
.login input { width: 100%; margin-bottom: 12px; }
.login button { width: 100%; padding: 8px; }
`;
