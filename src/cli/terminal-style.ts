/** ANSI dim/bold only when the output is a terminal, so piped output stays plain text. */
export interface Style {
  dim(text: string): string;
  bold(text: string): string;
}

export function styleFor(output: NodeJS.WritableStream): Style {
  const tty = (output as { isTTY?: boolean }).isTTY === true && !process.env.NO_COLOR;
  if (!tty) return { dim: (t) => t, bold: (t) => t };
  return { dim: (t) => `\x1b[2m${t}\x1b[22m`, bold: (t) => `\x1b[1m${t}\x1b[22m` };
}
