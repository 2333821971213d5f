// Job output with its ANSI colours, rendered safely: SGR sequences (`ESC[…m`) become
// spans with a fixed set of classes (bold, the 16 colours as foreground and background,
// reset); every other control character is made visible (ESC shows as ␛) and bidi
// overrides are replaced, so another user's output can neither hide text, inject markup
// (the text is text nodes, never HTML) nor look like the console's own.

import type { JSX } from "preact";

/** The look in force after some SGR codes. */
interface Look {
  bold: boolean;
  fg: number | null;
  bg: number | null;
}

const PLAIN: Look = { bold: false, fg: null, bg: null };

/** Applies SGR parameters (`1;31`, `0`, `` = reset) to a look; unknown ones are ignored. */
function apply(look: Look, params: string): Look {
  let next = { ...look };
  const codes = params === "" ? [0] : params.split(";").map((p) => (p === "" ? 0 : Number(p)));
  for (let i = 0; i < codes.length; i++) {
    const c = codes[i]!;
    if (c === 0) next = { ...PLAIN };
    else if (c === 1) next.bold = true;
    else if (c === 22) next.bold = false;
    else if (c >= 30 && c <= 37) next.fg = c - 30;
    else if (c >= 90 && c <= 97) next.fg = c - 90 + 8;
    else if (c === 39) next.fg = null;
    else if (c >= 40 && c <= 47) next.bg = c - 40;
    else if (c >= 100 && c <= 107) next.bg = c - 100 + 8;
    else if (c === 49) next.bg = null;
    // 256-colour and true-colour forms: skip their arguments, keep the look.
    else if ((c === 38 || c === 48) && codes[i + 1] === 5) i += 2;
    else if ((c === 38 || c === 48) && codes[i + 1] === 2) i += 4;
  }
  return next;
}

/** Control characters made visible, bidi overrides replaced. */
export function visible(text: string): string {
  return text
    .replace(/[\u0000-\u0008\u000b-\u001f\u007f]/g, (c) => String.fromCharCode(0x2400 + (c === "\u007f" ? 0x21 : c.charCodeAt(0))))
    .replace(/[\u202a-\u202e\u2066-\u2069]/g, "\ufffd");
}

// An SGR sequence: ESC [ digits and semicolons m.
const SGR = /\u001b\[([0-9;]{0,32})m/g;

/** Carriage returns as a terminal shows them: a line rewritten after a CR (a progress
 * bar) shows its last version only; CR LF is a plain line end. */
export function overstrike(text: string): string {
  return text
    .replace(/\r+\n/g, "\n")
    .split("\n")
    .map((line) => {
      const cr = line.lastIndexOf("\r");
      if (cr < 0) return line;
      // The last non-empty rewrite (a trailing CR leaves the line as it was).
      const rewrites = line.split("\r").filter((r) => r !== "");
      return rewrites[rewrites.length - 1] ?? "";
    })
    .join("\n");
}

/** The output as text nodes in spans: carriage returns as a terminal shows them
 * ([`overstrike`]), colours from SGR sequences, everything else through [`visible`]. */
export function AnsiText({ text: raw }: { text: string }): JSX.Element {
  const text = overstrike(raw);
  const parts: JSX.Element[] = [];
  let look = PLAIN;
  let at = 0;
  const push = (chunk: string) => {
    if (!chunk) return;
    const classes = [look.bold ? "a-b" : "", look.fg !== null ? `a-f${look.fg}` : "", look.bg !== null ? `a-g${look.bg}` : ""]
      .filter(Boolean)
      .join(" ");
    parts.push(classes ? <span class={classes}>{visible(chunk)}</span> : <>{visible(chunk)}</>);
  };
  for (const m of text.matchAll(SGR)) {
    push(text.slice(at, m.index));
    look = apply(look, m[1] ?? "");
    at = m.index + m[0].length;
  }
  push(text.slice(at));
  return <>{parts}</>;
}
