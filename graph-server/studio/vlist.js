// A virtualised list: only the rows in view (and a few around them) are in the
// DOM, so a history of thousands of checkpoints scrolls as smoothly as ten.
// The container is a listbox: arrow keys, Page Up/Down, Home and End move the
// selection.

export class VirtualList {
  /**
   * `container`: a scrollable element; `rowHeight`: px, the same for every
   * row; `renderRow(item, index, selected)` returns the row's element;
   * `onSelect(index)` is called when the selection changes.
   */
  constructor(container, rowHeight, renderRow, onSelect) {
    this.el = container;
    this.rowHeight = rowHeight;
    this.renderRow = renderRow;
    this.onSelect = onSelect;
    this.items = [];
    this.selected = -1;
    this.spacer = document.createElement("div");
    this.spacer.className = "vlist-spacer";
    this.el.append(this.spacer);
    this.frame = 0;
    this.el.addEventListener("scroll", () => this.schedule(), { passive: true });
    this.el.addEventListener("keydown", (e) => this.key(e));
    this.el.addEventListener("click", (e) => {
      const row = e.target.closest("[data-index]");
      if (row) this.select(Number(row.dataset.index), true);
    });
    new ResizeObserver(() => this.schedule()).observe(this.el);
  }

  setItems(items) {
    this.items = items;
    this.selected = Math.min(this.selected, items.length - 1);
    this.spacer.style.height = `${items.length * this.rowHeight}px`;
    this.draw();
  }

  schedule() {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.draw();
    });
  }

  draw() {
    const top = this.el.scrollTop;
    const height = this.el.clientHeight || 400;
    const first = Math.max(0, Math.floor(top / this.rowHeight) - 4);
    const last = Math.min(this.items.length, Math.ceil((top + height) / this.rowHeight) + 4);
    const rows = [];
    for (let i = first; i < last; i++) {
      const row = this.renderRow(this.items[i], i, i === this.selected);
      row.dataset.index = String(i);
      row.id = `${this.el.id}-row-${i}`;
      row.style.top = `${i * this.rowHeight}px`;
      row.style.height = `${this.rowHeight}px`;
      rows.push(row);
    }
    this.spacer.replaceChildren(...rows);
    if (this.selected >= 0) this.el.setAttribute("aria-activedescendant", `${this.el.id}-row-${this.selected}`);
    else this.el.removeAttribute("aria-activedescendant");
  }

  /** Selects row `i`, scrolls it into view, and tells `onSelect` when `notify`. */
  select(i, notify = true) {
    if (i < 0 || i >= this.items.length) return;
    this.selected = i;
    const y = i * this.rowHeight;
    if (y < this.el.scrollTop) this.el.scrollTop = y;
    else if (y + this.rowHeight > this.el.scrollTop + this.el.clientHeight) this.el.scrollTop = y + this.rowHeight - this.el.clientHeight;
    this.draw();
    if (notify) this.onSelect(i);
  }

  key(e) {
    const page = Math.max(1, Math.floor(this.el.clientHeight / this.rowHeight) - 1);
    const moves = { ArrowDown: 1, ArrowUp: -1, PageDown: page, PageUp: -page };
    let i = this.selected;
    if (e.key in moves) i += moves[e.key];
    else if (e.key === "Home") i = 0;
    else if (e.key === "End") i = this.items.length - 1;
    else return;
    e.preventDefault();
    this.select(Math.max(0, Math.min(this.items.length - 1, i)));
  }
}
