// How the script editor is laid out, kept in this browser per template category: one column
// (the editor above its panes) or two (the editor beside them), and which pane is in front.
// Expert mode (more runtime detail: the host API, the limits, the request sent) is one setting.

export interface Layout {
  columns: 1 | 2;
  pane: "preview" | "generate";
}

const DEFAULT: Layout = { columns: 2, pane: "preview" };
const KEY = "plait.scripts.layout.";
const EXPERT = "plait.scripts.expert";
const LAST = "plait.scripts.last";

export function readLayout(category: string): Layout {
  try {
    const kept = JSON.parse(localStorage.getItem(KEY + category) ?? "null") as Partial<Layout> | null;
    return {
      columns: kept?.columns === 1 ? 1 : 2,
      pane: kept?.pane === "generate" ? "generate" : "preview",
    };
  } catch {
    return DEFAULT;
  }
}

export function writeLayout(category: string, layout: Layout): void {
  try {
    localStorage.setItem(KEY + category, JSON.stringify(layout));
  } catch {
    // refused: the layout lasts as long as the page
  }
}

export function readExpert(): boolean {
  try {
    return localStorage.getItem(EXPERT) === "1";
  } catch {
    return false;
  }
}

export function writeExpert(on: boolean): void {
  try {
    localStorage.setItem(EXPERT, on ? "1" : "0");
  } catch {
    // refused: lasts as long as the page
  }
}

/** The template last opened in this browser, to reopen when the editor is opened without one. */
export function lastOpened(): string | null {
  try {
    return localStorage.getItem(LAST);
  } catch {
    return null;
  }
}

export function rememberOpened(templateId: string): void {
  try {
    localStorage.setItem(LAST, templateId);
  } catch {
    // refused: nothing to reopen next time
  }
}
