"""The robot's motion and frame layout: a figure-eight drive, amcl's drifting ``map → odom``.

Every edge of the transform tree is a function of time here; :mod:`.plan` samples these
functions at the times each publisher would (odometry 50 Hz, amcl 10 Hz, ...) and the
ground truth (:mod:`.truth`) interpolates the published samples, as tf2 does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final

from tests.nuscenes.robots.geometry import Matrix, euler_xyzw, inverse, matrix, rpy_matrix
from tests.nuscenes.robots.spec import Scenario, StaticEdge

__all__ = [
    "BASE_HEIGHT_M",
    "WHEEL_RADIUS_M",
    "Motion",
    "edge_matrix",
    "robot_static_edges",
]

#: base_link above base_footprint (TurtleBot 4: the wheel axle height).
BASE_HEIGHT_M: Final = 0.0785
WHEEL_RADIUS_M: Final = 0.036
_WHEEL_Y_M: Final = 0.117
#: The figure-eight: one loop per minute, 8 m by 4 m.
_PERIOD_S: Final = 60.0
_HALF_X_M: Final = 4.0
_HALF_Y_M: Final = 2.0
#: Phase of the loop at the start: the robot is already turning.
_PHASE_S: Final = 4.0


def edge_matrix(edge: StaticEdge) -> Matrix:
    return matrix(edge.translation, euler_xyzw(*edge.rpy))


@dataclass(frozen=True, slots=True)
class Motion:
    """The continuous motion of one scenario; *t_s* is seconds since the scenario's start."""

    scenario: Scenario

    def footprint_in_map(self, t_s: float) -> Matrix:
        """base_footprint in ``map``: a figure-eight, heading along the path."""
        w = 2 * math.pi / _PERIOD_S
        tau = t_s + _PHASE_S
        x = _HALF_X_M * math.sin(w * tau)
        y = _HALF_Y_M * math.sin(2 * w * tau)
        yaw = math.atan2(
            2 * _HALF_Y_M * w * math.cos(2 * w * tau), _HALF_X_M * w * math.cos(w * tau)
        )
        tilt = math.radians(self.scenario.tilt_deg)
        roll = tilt * math.sin(0.9 * t_s)
        pitch = 0.7 * tilt * math.sin(1.3 * t_s + 0.4)
        return rpy_matrix((x, y, 0.0), roll, pitch, yaw)

    def base_in_map(self, frame: str, t_s: float) -> Matrix:
        """*frame* (``base_footprint`` or ``base_link``) in ``map``."""
        footprint = self.footprint_in_map(t_s)
        if frame == "base_footprint":
            return footprint
        return footprint @ rpy_matrix((0.0, 0.0, BASE_HEIGHT_M), 0.0, 0.0, 0.0)

    def map_to_odom(self, t_s: float) -> Matrix:
        """amcl's correction: odom drifts away from map (16.7° at the start, 0.01 rad/s more)."""
        translation = (
            0.35 + 0.012 * t_s + 0.03 * math.sin(0.3 * t_s),
            -0.22 + 0.008 * t_s,
            0.0,
        )
        yaw = 0.29 + 0.01 * t_s + 0.01 * math.sin(0.5 * t_s)
        return rpy_matrix(translation, 0.0, 0.0, yaw)

    def odom_to_child(self, t_s: float) -> Matrix:
        """Wheel odometry: the odom child in ``odom`` (the true pose seen through the drift)."""
        child = self.scenario.odom_child
        return inverse(self.map_to_odom(t_s)) @ self.base_in_map(child, t_s)

    def wheel(self, side: str, t_s: float) -> Matrix:
        """A wheel joint (robot_state_publisher, from /joint_states): it spins as it drives."""
        angle = (0.5 if side == "left" else 0.45) * t_s / WHEEL_RADIUS_M
        y = _WHEEL_Y_M if side == "left" else -_WHEEL_Y_M
        return rpy_matrix((0.0, y, WHEEL_RADIUS_M - BASE_HEIGHT_M), 0.0, angle, 0.0)


def robot_static_edges(scenario: Scenario) -> tuple[StaticEdge, ...]:
    """robot_state_publisher's static edges that are not a camera mount."""
    if scenario.odom_child == "base_link":
        base = StaticEdge("base_link", "base_footprint", (0.0, 0.0, -BASE_HEIGHT_M))
    else:
        base = StaticEdge("base_footprint", "base_link", (0.0, 0.0, BASE_HEIGHT_M))
    edges = [
        base,
        StaticEdge("base_link", "rplidar_link", (-0.04, 0.0, 0.1915), (0.0, 0.0, math.pi / 2)),
        StaticEdge("base_link", "imu_link", (0.0, 0.0, 0.0)),
    ]
    if scenario.gnss:
        edges.append(StaticEdge("base_link", "gps_link", (0.1, 0.02, 0.45)))
    return (*edges, *scenario.extra_static)
