// The route is the URL's hash (`#/chat/bob` is ["chat", "bob"]): links and the back button work,
// and a static file server needs no rewrite rules. An app of any size would use a router library.
import { useSyncExternalStore } from "react";

const subscribe = (onChange: () => void) => {
  window.addEventListener("hashchange", onChange);
  return () => window.removeEventListener("hashchange", onChange);
};

export function useRoute(): string[] {
  const hash = useSyncExternalStore(subscribe, () => window.location.hash);
  return hash.replace(/^#\/?/, "").split("/").filter(Boolean).map(decodeURIComponent);
}

export const href = (...parts: string[]) => `#/${parts.map(encodeURIComponent).join("/")}`;

export const navigate = (...parts: string[]) => {
  window.location.hash = href(...parts);
};
