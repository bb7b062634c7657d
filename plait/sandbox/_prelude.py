"""The JavaScript run once in every evaluation context: the lockdown, then the runner.

Lockdown (after SES's `lockdown()`, reduced to what an expression sandbox needs):

1. The code-generating constructors are tamed: `Function.prototype.constructor` and the
   `constructor` of the async, generator and async-generator function prototypes become
   functions that throw, and the global `Function` is replaced by the same stub (it keeps
   `Function.prototype`, so `x instanceof Function` still works).
2. Capabilities are removed from the global object: `eval`, `WebAssembly`, `Atomics`,
   `SharedArrayBuffer`, `FinalizationRegistry`, `WeakRef`, `console`, timers and `performance`
   (a clock finer than `Date`), and every source of promises that is not syntax (`Promise`,
   `queueMicrotask`, `Array.fromAsync`, `AsyncDisposableStack`). QuickJS itself has no
   `require`, `process`, `fetch` or module loader (its `std` and `os` modules are not loaded).
   `Error.prepareStackTrace` and `Error.stackTraceLimit` are pinned: QuickJS keeps them in the
   runtime, so one evaluation setting them would shape the next one's errors.
3. `RegExp`'s legacy static properties (`RegExp.$1`, `lastMatch`, ...) are deleted: they would
   carry the last match of one evaluation into the next.
4. A few prototype properties that programs commonly assign on their own objects
   (`obj.toString = ...`, `err.message = ...`) become accessors, so that freezing the prototype
   does not make such assignments throw (the "override mistake").
5. Everything reachable from `globalThis` and from the hidden intrinsics (iterator, generator,
   async-function prototypes, `%TypedArray%`, ...) is frozen: prototypes, constructors,
   accessor functions and `globalThis` itself. No evaluation can change what the next sees.

The runner is a script-scope `const` with a per-context random name (never a property of
`globalThis`, so it cannot be enumerated). It is not privileged: it parses the JSON arguments,
deep-freezes them, calls the compiled expression and serialises the result strictly (functions,
symbols, BigInt, non-finite numbers, cycles and non-plain objects are errors). It returns the
result's JSON text, or, for a thrown value, a one-element array holding the JSON text of
`{name, message, stack}`. A function `call` returns a promise from (an `async function main`)
is awaited: `call` answers null, the host runs the microtasks, and `settled()` then gives the
promise's outcome the same way (null while it has none). (Not a tagged string: `"R" + text`
would be a QuickJS rope, which the Python binding cannot read.)
"""

from __future__ import annotations

RUNNER_PLACEHOLDER = "__PLAIT_RUNNER__"
DEPTH_PLACEHOLDER = "__PLAIT_MAX_DEPTH__"
"""Replaced by `plait.model.limits.MAX_DEPTH` when a context is made (`_context.py`); not
imported here, so that an evaluator process starts without the value-limit machinery."""
EXPRESSION_URL = "plait-expression"
RUNTIME_URL = "plait-runtime"

PRELUDE = (
    r"""
"use strict";
const __PLAIT_RUNNER__ = (() => {
  const MAX_DEPTH = __PLAIT_MAX_DEPTH__;
  const g = globalThis;
  const { freeze, getPrototypeOf, getOwnPropertyDescriptor, defineProperty, values } = Object;
  const { ownKeys, apply } = Reflect;
  const { parse, stringify } = JSON;
  const isArray = Array.isArray;
  const hasOwn = Object.hasOwn;
  const numberIsFinite = Number.isFinite;
  const ObjectPrototype = Object.prototype;
  const FunctionPrototype = Function.prototype;
  const ErrorCtor = Error;
  const TypeErrorCtor = TypeError;
  const RangeErrorCtor = RangeError;
  const StringCtor = String;
  const SetCtor = Set;
  const PromiseCtor = Promise; // removed from the global object below; async functions still make them
  const promiseThen = Promise.prototype.then;

  // Hidden intrinsics: not reachable by a global name, only through instances.
  const hidden = [];
  const reach = (make) => {
    try {
      hidden.push(make());
    } catch (e) {
      // an intrinsic this V8 does not have
    }
  };
  reach(() => getPrototypeOf(function* () {}));
  reach(() => getPrototypeOf(async function () {}));
  reach(() => getPrototypeOf(async function* () {}));
  reach(() => getPrototypeOf(async () => {}));
  reach(() => getPrototypeOf([][Symbol.iterator]()));
  reach(() => getPrototypeOf(new Map()[Symbol.iterator]()));
  reach(() => getPrototypeOf(new Set()[Symbol.iterator]()));
  reach(() => getPrototypeOf(""[Symbol.iterator]()));
  reach(() => getPrototypeOf(/x/[Symbol.matchAll]("")));
  reach(() => getPrototypeOf(Uint8Array));
  reach(() => getPrototypeOf([].values().map((x) => x)));
  reach(() => getPrototypeOf(Iterator.from({ next: () => ({ done: true }) })));
  reach(() => getPrototypeOf(new Intl.Segmenter().segment("")));
  reach(() => getPrototypeOf(new Intl.Segmenter().segment("")[Symbol.iterator]()));
  reach(() => getPrototypeOf((function () { return arguments; })()));
  reach(() => getOwnPropertyDescriptor(FunctionPrototype, "caller").get);
  // Removed from the global object below, still reachable through instances:
  reach(() => Promise); // (async () => {})().constructor
  reach(() => AsyncDisposableStack);

  // 1. Tame the code-generating constructors.
  const tame = (proto, name) => {
    const denied = {
      [name]: function () {
        throw new TypeErrorCtor(name + " is not available in the sandbox");
      },
    }[name];
    defineProperty(denied, "prototype", { value: proto, writable: false });
    defineProperty(proto, "constructor", { value: denied, writable: false, configurable: false });
    return denied;
  };
  const deniedFunction = tame(FunctionPrototype, "Function");
  tame(getPrototypeOf(async function () {}), "AsyncFunction");
  tame(getPrototypeOf(function* () {}), "GeneratorFunction");
  tame(getPrototypeOf(async function* () {}), "AsyncGeneratorFunction");
  defineProperty(g, "Function", { value: deniedFunction, writable: false, enumerable: false, configurable: false });

  // 2. Remove capabilities.
  // Promise sources other than syntax go too: only `async` and `import` can queue a microtask,
  // and the host runs those only within the evaluation's deadline (see _context.py).
  delete Array.fromAsync;
  for (const name of [
    "eval", "WebAssembly", "Atomics", "SharedArrayBuffer", "FinalizationRegistry", "WeakRef",
    "console", "setTimeout", "clearTimeout", "setInterval", "clearInterval", "queueMicrotask",
    "__timer_manager", "Promise", "AsyncDisposableStack", "performance",
  ]) {
    const desc = getOwnPropertyDescriptor(g, name);
    if (desc === undefined) continue;
    if (desc.configurable) delete g[name];
    else if (desc.writable) g[name] = undefined;
  }

  // QuickJS keeps `Error.prepareStackTrace` and `Error.stackTraceLimit` in the runtime, behind
  // accessors: set by one evaluation, they would shape every later evaluation's errors. Pinned.
  for (const name of ["prepareStackTrace", "stackTraceLimit"]) {
    const desc = getOwnPropertyDescriptor(ErrorCtor, name);
    if (desc === undefined || !desc.configurable) continue;
    const value = desc.get ? apply(desc.get, ErrorCtor, []) : desc.value;
    defineProperty(ErrorCtor, name, { value, writable: false, enumerable: false, configurable: false });
  }

  // 3. RegExp legacy statics remember the last match across evaluations.
  for (const key of ownKeys(RegExp)) {
    if (key === "prototype" || key === "length" || key === "name" || typeof key === "symbol") continue;
    const desc = getOwnPropertyDescriptor(RegExp, key);
    if (desc.configurable) delete RegExp[key];
  }

  // 4. Keep ordinary assignments working on objects that inherit from frozen prototypes.
  const enable = (obj, prop) => {
    const desc = getOwnPropertyDescriptor(obj, prop);
    if (desc === undefined || !("value" in desc) || !desc.configurable) return;
    const value = desc.value;
    defineProperty(obj, prop, {
      get() {
        return value;
      },
      set(next) {
        if (this === obj) throw new TypeErrorCtor("Cannot assign to read only property '" + prop + "'");
        defineProperty(this, prop, { value: next, writable: true, enumerable: true, configurable: true });
      },
      enumerable: desc.enumerable,
      configurable: false,
    });
  };
  for (const prop of ["constructor", "toString", "valueOf", "toLocaleString"]) enable(ObjectPrototype, prop);
  for (const prop of ["constructor", "name", "message", "toString"]) enable(ErrorCtor.prototype, prop);

  // 5. Freeze everything reachable.
  const harden = (roots) => {
    const seen = new SetCtor();
    const stack = roots.slice();
    while (stack.length > 0) {
      const obj = stack.pop();
      if ((typeof obj !== "object" || obj === null) && typeof obj !== "function") continue;
      if (seen.has(obj)) continue;
      seen.add(obj);
      freeze(obj);
      stack.push(getPrototypeOf(obj));
      for (const key of ownKeys(obj)) {
        const desc = getOwnPropertyDescriptor(obj, key);
        if ("value" in desc) stack.push(desc.value);
        else stack.push(desc.get, desc.set);
      }
    }
  };

  // --- the runner ---------------------------------------------------------------------------
  // The arguments arrive as one JSON array (hence MAX_DEPTH + 1); deeper values are refused
  // here, iteratively, before the expression can see them.
  const freezeJson = (root, what) => {
    const stack = [root, 0];
    while (stack.length > 0) {
      const depth = stack.pop();
      const value = stack.pop();
      if (typeof value === "object" && value !== null) {
        if (depth > MAX_DEPTH) {
          throw new RangeErrorCtor("the " + what + " nested deeper than the limit of " + MAX_DEPTH + " levels");
        }
        freeze(value);
        for (const item of values(value)) if (typeof item === "object" && item !== null) stack.push(item, depth + 1);
      }
    }
    return root;
  };
  const notJson = (what) => {
    throw new TypeErrorCtor("the result is not a JSON value: it contains " + what);
  };
  const DatePrototype = Date.prototype;
  const MapCtor = Map;
  // JSON.stringify calls toJSON before the replacer sees a value: a Date arrives as a string.
  // `this[key]` is the value before that call, so a Date is refused instead of silently
  // becoming text; the depth of each object is its holder's plus one.
  const makeReplacer = () => {
    const depths = new MapCtor();
    return function (key, value) {
      const raw = this[key];
      if (typeof raw === "object" && raw !== null && raw !== value && getPrototypeOf(raw) === DatePrototype) {
        return notJson("a Date; return date.toISOString() (or the number date.getTime())");
      }
      if (typeof value === "object" && value !== null) {
        const depth = (depths.get(this) || 0) + 1;
        if (depth > MAX_DEPTH) {
          throw new RangeErrorCtor("the result is nested deeper than the limit of " + MAX_DEPTH + " levels");
        }
        depths.set(value, depth);
      }
      return replacer(key, value);
    };
  };
  const replacer = (key, value) => {
    switch (typeof value) {
      case "function":
        return notJson("a function");
      case "symbol":
        return notJson("a symbol");
      case "bigint":
        return notJson("a BigInt");
      case "number":
        return numberIsFinite(value) ? value : notJson(StringCtor(value));
      case "object": {
        if (value === null || isArray(value)) return value;
        const proto = getPrototypeOf(value);
        if (proto !== ObjectPrototype && proto !== null) {
          const ctor = proto.constructor;
          const name = typeof ctor === "function" && typeof ctor.name === "string" ? ctor.name : "object";
          return notJson("a " + (name || "non-plain object"));
        }
        return value;
      }
      default:
        return value;
    }
  };
  const serialize = (value, maxChars) => {
    const text = value === undefined ? "null" : stringify(value, makeReplacer());
    if (text === undefined) return "null";
    if (text.length > maxChars) {
      throw new RangeErrorCtor("the result is larger than the limit of " + maxChars + " bytes");
    }
    return text;
  };
  const describeValue = (value) => {
    if (typeof value === "string") return value;
    try {
      const text = stringify(value);
      if (typeof text === "string") return text;
    } catch (e) {
      // fall through
    }
    return StringCtor(value);
  };
  const describe = (error) => {
    let name = "Error";
    let message = "";
    let stack = "";
    try {
      if ((typeof error === "object" || typeof error === "function") && error !== null && error instanceof ErrorCtor) {
        name = StringCtor(error.name);
        message = StringCtor(error.message);
        stack = typeof error.stack === "string" ? error.stack : "";
      } else {
        name = "thrown value";
        message = describeValue(error);
      }
    } catch (e) {
      message = message || "(the thrown value cannot be described)";
    }
    return [stringify({ name, message: message.slice(0, 2000), stack: stack.slice(0, 4000) })];
  };
  const guard = (body) => {
    try {
      return body();
    } catch (error) {
      return describe(error);
    }
  };
  // The outcome of the promise the last `call` returned: a result or error, as `guard` gives them.
  let settled = undefined;
  const runner = freeze({
    evaluate(compiled, argsJson, maxChars) {
      return guard(() => serialize(apply(compiled, undefined, freezeJson(parse(argsJson), "scope is")), maxChars));
    },
    call(make, argsJson, maxChars) {
      return guard(() => {
        const fn = make();
        if (typeof fn !== "function") {
          const got = fn === null ? "null" : typeof fn;
          throw new TypeErrorCtor("the expression is not a function (it is " + got + ")");
        }
        const value = apply(fn, undefined, freezeJson(parse(argsJson), "arguments are"));
        if (value instanceof PromiseCtor) {
          // An async function: its outcome arrives while the host runs the microtasks.
          settled = undefined;
          apply(promiseThen, value, [
            (result) => {
              settled = guard(() => serialize(result, maxChars));
            },
            (error) => {
              settled = describe(error);
            },
          ]);
          return null;
        }
        return serialize(value, maxChars);
      });
    },
    settled() {
      const outcome = settled;
      settled = undefined;
      return outcome === undefined ? null : outcome;
    },
  });

  harden([g, ...hidden, runner]);
  return runner;
})();
"""
    + f"//# sourceURL={RUNTIME_URL}\n"
)


BRIDGE = r"""
const __BRIDGE__ = (() => {
  const queue = [];
  const logs = [];
  const waiting = new Map();
  const { stringify, parse } = JSON;
  const freeze = Object.freeze;
  const ErrorCtor = Error;
  const PromiseCtor = Promise; // the lockdown removes the global later; requests still make promises
  let next = 0;
  const shown = (value) => {
    if (typeof value === "string") return value;
    if (value === undefined) return "undefined";
    if (typeof value === "function") return "[function]";
    if (typeof value === "bigint" || typeof value === "symbol") return String(value);
    try { const text = stringify(value); return text === undefined ? String(value) : parse(text); }
    catch (e) { return "[" + (e && e.message ? e.message : "unprintable") + "]"; }
  };
  return freeze({
    request(api, args) {
      const id = next++;
      const origin = new ErrorCtor("");  // where the script asked: a refusal reports that line
      queue.push([id, api, args]);
      // A promise, settled when the host answers, whether or not the script awaits it yet.
      return new PromiseCtor((ok, fail) => { waiting.set(id, [ok, fail, origin]); });
    },
    log(level, args) { logs.push([level, args.map(shown)]); },
    take() { const out = stringify([queue.splice(0), logs.splice(0)]); return out; },
    settle(id, ok, text) {
      const found = waiting.get(id);
      if (found === undefined) return;
      waiting.delete(id);
      if (ok) { found[0](parse(text)); return; }
      found[2].message = text;
      found[1](found[2]);
    },
  });
})();
"""
"""The host side of a prompt script (`plait.sandbox.scripts`), evaluated before the lockdown under
a per-run name: the script's host calls queue requests here and get a promise each; the host
takes the queue between slices of JavaScript and settles the promises with its answers. A
promise is made at the call, so two calls in flight that are awaited one after the other both
settle."""
