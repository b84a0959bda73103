import { Args, Flags } from '#oclif-core';
import { BaseCommand } from '../../src/cli/baseCommand.js';
import { auditDbFlag } from '../../src/cli/auditFlags.js';
import { readRunReport } from '../../src/audit/report.js';
import { readDrillHistory } from '../../src/audit/drillRuns.js';
import { renderDrillHistoryHtml, renderDrillHistoryMarkdown } from '../../src/cli/output/reportDrill.js';
import { renderReportHtml } from '../../src/cli/output/reportHtml.js';
import { renderReportMarkdown } from '../../src/cli/output/reportMarkdown.js';
import { writeReportFile } from '../../src/cli/output/reportFile.js';
import { toJson } from '../../src/cli/output/json.js';
import { InputError } from '../../src/common/errors.js';
import { FORCE_FLAG_DESCRIPTION, refuseExistingOutput } from '../../src/common/outputFile.js';

export default class AuditReport extends BaseCommand {
  static override summary = 'Write one run as a self-contained HTML page, or as Markdown.';

  static override description =
    "One run as a report: outcome, reason, who and when; the cluster and member IDs before and after; a timeline chart of every step attempt with its duration and status; the prompts and answers; the variables (values whose names look like a password, token or key masked everywhere); the recover plan it showed; and the audit chain's verification and head. A drill's report adds its recovery time per phase as a bar chart (a table in Markdown). --drills instead reports every drill's recovery time over time (a chart and a table; Markdown: a table). HTML (one file: inline CSS and SVG, nothing fetched) goes to stdout unless --html FILE or --out FILE is given; an existing FILE is refused (exit 3) unless --force; --markdown prints Markdown for tickets and post-mortems; -w json prints the report's data.";

  static override examples = [
    '<%= config.bin %> audit report r-20261122-083015-3f2a --html report.html',
    '<%= config.bin %> audit report r-20261122-083015-3f2a --markdown >> postmortem.md',
    '<%= config.bin %> audit report r-20261122-083015-3f2a > report.html',
    '<%= config.bin %> audit report --drills --html drills.html',
  ];

  static override args = {
    run_id: Args.string({ description: "run ID, as 'lifeboat audit list' shows it (or --drills)" }),
  };

  static override flags = {
    html: Flags.string({
      description: 'write the HTML page to FILE (via FILE.tmp, then renamed; an existing FILE needs --force)',
      helpValue: 'FILE',
      exclusive: ['markdown', 'out'],
    }),
    markdown: Flags.boolean({ description: 'Markdown instead of HTML (to stdout, or to --out FILE)', exclusive: ['html'] }),
    out: Flags.string({
      description: 'write to FILE instead of stdout (via FILE.tmp, then renamed; an existing FILE needs --force)',
      helpValue: 'FILE',
      exclusive: ['html'],
    }),
    force: Flags.boolean({ description: FORCE_FLAG_DESCRIPTION, default: false }),
    drills: Flags.boolean({ description: "every drill's recovery time over time, instead of one run", default: false }),
    'audit-db': auditDbFlag,
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(AuditReport);
    if (flags['write-out'] === 'json' && (flags.markdown || flags.html !== undefined)) {
      throw new InputError("-w json prints the report's data: leave out --markdown and --html (use --out FILE to write it to a file)");
    }
    if (flags.drills && args.run_id !== undefined)
      throw new InputError(`give a run ID or --drills, not both (--drills reports every drill; ${args.run_id} is one run)`);
    const file = flags.html ?? flags.out;
    if (file !== undefined) refuseExistingOutput(file, flags.force, flags.html === undefined ? '--out' : '--html');
    let text: string;
    if (flags.drills) {
      const history = readDrillHistory(flags['audit-db']);
      text = flags['write-out'] === 'json' ? `${toJson(history)}\n` : flags.markdown ? renderDrillHistoryMarkdown(history) : renderDrillHistoryHtml(history);
    } else {
      if (args.run_id === undefined) throw new InputError("give the run ID to report (see 'lifeboat audit list'), or --drills for the history of drills");
      const report = readRunReport(flags['audit-db'], args.run_id);
      text = flags['write-out'] === 'json' ? `${toJson(report)}\n` : flags.markdown ? renderReportMarkdown(report) : renderReportHtml(report);
    }
    if (file === undefined) process.stdout.write(text);
    else writeReportFile(file, text);
  }
}
