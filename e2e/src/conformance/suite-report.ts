/**
 * The figures of a Ginkgo run from its JSON report (`--ginkgo.json-report`).
 *
 *   interface SpecOutcome { name, state, message }
 *   interface SuiteFigures { passed, failed, skipped, failures: SpecOutcome[], skips: SpecOutcome[] }
 *   suiteFigures(reportJson): SuiteFigures
 *   summaryLine(figures, suite?): string   "<suite>: N passed, N failed, N skipped" (default node-conformance)
 *   selectedSpecNames(dryRunReportJson): string[]   the specs a dry run (--ginkgo.dry-run) selected
 *
 * Only specs the run selected count: a spec left out by the label filter or focus is reported
 * "skipped" with no message and is not counted; one that skipped itself (Skip with a reason) is.
 * A failed suite setup or teardown node (BeforeSuite, AfterSuite, ...) counts as one failure each.
 */

export interface SpecOutcome {
  /** The container texts and the spec's own text, joined by spaces, as Ginkgo prints them. */
  name: string;
  state: string;
  message: string;
}

export interface SuiteFigures {
  passed: number;
  failed: number;
  skipped: number;
  failures: SpecOutcome[];
  skips: SpecOutcome[];
}

interface RawSpecReport {
  ContainerHierarchyTexts?: string[] | null;
  LeafNodeType?: string;
  LeafNodeText?: string;
  State?: string;
  Failure?: { Message?: string };
}

const FAILURE_STATES = new Set(['failed', 'timedout', 'aborted', 'panicked', 'interrupted']);

function specName(spec: RawSpecReport): string {
  const texts = [...(spec.ContainerHierarchyTexts ?? []), spec.LeafNodeText ?? ''].filter((t) => t !== '');
  return texts.length > 0 ? texts.join(' ') : `[${spec.LeafNodeType ?? '?'}]`;
}

function specReports(reportJson: string): RawSpecReport[] {
  const reports = JSON.parse(reportJson) as { SpecReports?: RawSpecReport[] | null }[];
  return reports.flatMap((report) => report.SpecReports ?? []);
}

/** A dry run reports every spec it would run as passed, and the others as skipped. */
function selectedSpecReports(dryRunReportJson: string): RawSpecReport[] {
  return specReports(dryRunReportJson).filter((spec) => spec.LeafNodeType === 'It' && spec.State === 'passed');
}

export function selectedSpecNames(dryRunReportJson: string): string[] {
  return selectedSpecReports(dryRunReportJson).map(specName);
}

/**
 * Each selected spec's container (its texts but the last): the specs of an Ordered container share
 * its state (an early spec runs the pod the later ones check), so they must run together.
 */
export function selectedSpecContainers(dryRunReportJson: string): Map<string, string> {
  return new Map(selectedSpecReports(dryRunReportJson).map((spec) => [specName(spec), (spec.ContainerHierarchyTexts ?? []).join(' ')]));
}

export function suiteFigures(reportJson: string): SuiteFigures {
  const figures: SuiteFigures = { passed: 0, failed: 0, skipped: 0, failures: [], skips: [] };
  for (const spec of specReports(reportJson)) {
    const state = spec.State ?? '';
    const message = spec.Failure?.Message ?? '';
    const outcome = { name: specName(spec), state, message };
    if (spec.LeafNodeType !== 'It') {
      if (FAILURE_STATES.has(state)) {
        figures.failed++;
        figures.failures.push(outcome);
      }
    } else if (state === 'passed') {
      figures.passed++;
    } else if (FAILURE_STATES.has(state)) {
      figures.failed++;
      figures.failures.push(outcome);
    } else if (state === 'skipped' && message !== '') {
      figures.skipped++;
      figures.skips.push(outcome);
    }
  }
  return figures;
}

export function summaryLine(figures: Pick<SuiteFigures, 'passed' | 'failed' | 'skipped'>, suite = 'node-conformance'): string {
  return `${suite}: ${figures.passed} passed, ${figures.failed} failed, ${figures.skipped} skipped`;
}
