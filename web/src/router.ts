// Routing on the URL's fragment (`#/runs/ID`): every deep link loads `/`, so the server needs
// no catch-all route next to the API.
import { useEffect, useState } from "react";

export interface Route {
  page: string;
  params: string[];
  query: URLSearchParams;
}

export function parseRoute(hash: string): Route {
  const [path, search = ""] = hash.replace(/^#\/?/, "").split("?");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  return { page: parts[0] ?? "graphs", params: parts.slice(1), query: new URLSearchParams(search) };
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(window.location.hash));
  useEffect(() => {
    const changed = () => setRoute(parseRoute(window.location.hash));
    window.addEventListener("hashchange", changed);
    return () => window.removeEventListener("hashchange", changed);
  }, []);
  return route;
}

export function href(...parts: string[]): string {
  return "#/" + parts.map(encodeURIComponent).join("/");
}

export function go(...parts: string[]): void {
  window.location.hash = href(...parts);
}

/** Show `parts` in the address bar in place of the current page (no new history entry). */
export function replaceWith(...parts: string[]): void {
  window.location.replace(href(...parts));
}

/** The current address with its query's `key` set to `value` (left out for null), in place of
 * the current one: the page stays, and a reload opens it as it is now. */
export function replaceQuery(key: string, value: string | null): void {
  const [path, search = ""] = window.location.hash.split("?");
  const query = new URLSearchParams(search);
  if (value === null) query.delete(key);
  else query.set(key, value);
  const rest = query.toString();
  window.location.replace(`${window.location.pathname}${window.location.search}${path || "#/"}${rest ? `?${rest}` : ""}`);
}
