// An edge drawn along the route the layout found for it (around the boxes between its ends), or,
// when that route no longer meets its boxes (one was moved or added since), as a smooth step.
import { BaseEdge, type Edge, type EdgeProps, getSmoothStepPath } from "@xyflow/react";
import { memo } from "react";
import type { Point } from "./layout";
import type { GraphEdgeDef } from "./model";

export type RoutedEdgeData = { def: GraphEdgeDef; route?: Point[] };

/** How far a route's end may be from its handle and still be drawn: React Flow puts an edge's
 * end on the handle's outer side, a few pixels off the box's side where the layout's port is. */
const NEAR = 6;
/** The corners' radius, as a smooth step's. */
const RADIUS = 5;

export const RoutedEdge = memo(function RoutedEdge(props: EdgeProps<Edge<RoutedEdgeData>>) {
  const [path, labelX, labelY] = edgePath(props);
  return (
    <BaseEdge
      path={path}
      labelX={labelX}
      labelY={labelY}
      label={props.label}
      labelStyle={props.labelStyle}
      labelShowBg={props.labelShowBg}
      labelBgStyle={props.labelBgStyle}
      labelBgPadding={props.labelBgPadding}
      labelBgBorderRadius={props.labelBgBorderRadius}
      style={props.style}
      markerEnd={props.markerEnd}
      markerStart={props.markerStart}
      interactionWidth={props.interactionWidth}
    />
  );
});

/** The edge's SVG path and its label's place: along its route while the route still meets both
 * handles, else a smooth step between them. */
function edgePath(props: EdgeProps<Edge<RoutedEdgeData>>): [string, number, number] {
  const { sourceX, sourceY, targetX, targetY, sourcePosition, targetPosition } = props;
  const from = { x: sourceX, y: sourceY };
  const to = { x: targetX, y: targetY };
  const route = props.data?.route;
  if (route && near(route[0], from) && near(route[route.length - 1], to)) {
    const points = tidied(meeting(route, from, to));
    const label = labelPoint(points);
    return [roundedPath(points), label.x, label.y];
  }
  const [path, labelX, labelY] = getSmoothStepPath({
    sourceX,
    sourceY,
    sourcePosition,
    targetX,
    targetY,
    targetPosition,
    borderRadius: RADIUS,
  });
  return [path, labelX, labelY];
}

function near(a: Point, b: Point): boolean {
  return Math.abs(a.x - b.x) <= NEAR && Math.abs(a.y - b.y) <= NEAR;
}

/** The route with its ends moved onto the handles. A bend next to an end moves with it across
 * the segment between them, so that segment stays horizontal (or vertical). */
function meeting(route: Point[], from: Point, to: Point): Point[] {
  const points = route.map((p) => ({ ...p }));
  const last = points.length - 1;
  if (last >= 2) {
    follow(points[0], points[1], from);
    follow(points[last], points[last - 1], to);
  }
  Object.assign(points[0], from);
  Object.assign(points[last], to);
  return points;
}

function follow(end: Point, bend: Point, moved: Point): void {
  if (Math.abs(end.y - bend.y) < 0.5) bend.y = moved.y;
  else if (Math.abs(end.x - bend.x) < 0.5) bend.x = moved.x;
}

/** The points without repeats and without points in the middle of a straight run. */
function tidied(points: Point[]): Point[] {
  const kept: Point[] = [];
  for (const p of points) {
    const prev = kept[kept.length - 1];
    if (prev && prev.x === p.x && prev.y === p.y) continue;
    const before = kept[kept.length - 2];
    if (prev && before && collinear(before, prev, p)) kept.pop();
    kept.push(p);
  }
  return kept;
}

function collinear(a: Point, b: Point, c: Point): boolean {
  return Math.abs((b.x - a.x) * (c.y - a.y) - (b.y - a.y) * (c.x - a.x)) < 1e-6;
}

/** An SVG path through `points`, each bend rounded with a quadratic curve (a smooth step's
 * corner), smaller where a segment is too short for a full one. */
export function roundedPath(points: Point[]): string {
  const parts = [`M ${points[0].x},${points[0].y}`];
  for (let i = 1; i < points.length - 1; i++) {
    const [a, b, c] = [points[i - 1], points[i], points[i + 1]];
    const r = Math.min(RADIUS, distance(a, b) / 2, distance(b, c) / 2);
    const inTo = toward(b, a, r);
    const outTo = toward(b, c, r);
    parts.push(`L ${inTo.x},${inTo.y}`, `Q ${b.x},${b.y} ${outTo.x},${outTo.y}`);
  }
  const end = points[points.length - 1];
  parts.push(`L ${end.x},${end.y}`);
  return parts.join(" ");
}

/** Where the label goes: halfway along the longest segment that is neither the first nor the
 * last (those an edge can share with the other edges of its source or target), else halfway
 * along the whole route. */
function labelPoint(points: Point[]): Point {
  let best: [Point, Point] | null = null;
  for (let i = 1; i + 2 < points.length; i++) {
    if (!best || distance(points[i], points[i + 1]) > distance(...best)) best = [points[i], points[i + 1]];
  }
  if (best) return midpoint(...best);
  return alongBy(points, length(points) / 2);
}

function alongBy(points: Point[], wanted: number): Point {
  let left = wanted;
  for (let i = 0; i + 1 < points.length; i++) {
    const step = distance(points[i], points[i + 1]);
    if (step >= left) return toward(points[i], points[i + 1], left);
    left -= step;
  }
  return points[points.length - 1];
}

function length(points: Point[]): number {
  let sum = 0;
  for (let i = 0; i + 1 < points.length; i++) sum += distance(points[i], points[i + 1]);
  return sum;
}

function distance(a: Point, b: Point): number {
  return Math.hypot(b.x - a.x, b.y - a.y);
}

function midpoint(a: Point, b: Point): Point {
  return { x: (a.x + b.x) / 2, y: (a.y + b.y) / 2 };
}

/** The point `by` from `from` toward `to`. */
function toward(from: Point, to: Point, by: number): Point {
  const d = distance(from, to);
  return d === 0 ? from : { x: from.x + ((to.x - from.x) * by) / d, y: from.y + ((to.y - from.y) * by) / d };
}
