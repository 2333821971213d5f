"""Contains all the data models used in inputs/outputs"""

from .account import Account
from .account_create import AccountCreate
from .account_list import AccountList
from .account_update import AccountUpdate
from .acct_job import AcctJob
from .acct_job_list import AcctJobList
from .acct_step import AcctStep
from .api_token import ApiToken
from .api_token_create import ApiTokenCreate
from .api_token_created import ApiTokenCreated
from .api_token_list import ApiTokenList
from .assignment import Assignment
from .assignment_environment import AssignmentEnvironment
from .assignment_slurm_variables import AssignmentSlurmVariables
from .audit_entry import AuditEntry
from .audit_list import AuditList
from .cancellation import Cancellation
from .cloud_event import CloudEvent
from .cloud_event_data import CloudEventData
from .cluster_info import ClusterInfo
from .cluster_timeline import ClusterTimeline
from .cluster_timeline_point import ClusterTimelinePoint
from .cluster_usage import ClusterUsage
from .cluster_usage_row import ClusterUsageRow
from .console_token import ConsoleToken
from .ec_2_options import Ec2Options
from .event_list import EventList
from .fairshare_list import FairshareList
from .fairshare_row import FairshareRow
from .gpu import Gpu
from .gpu_fault import GpuFault
from .gpu_fault_kind import GpuFaultKind
from .gpu_info import GpuInfo
from .gpu_kind import GpuKind
from .gpu_sample import GpuSample
from .gpu_series import GpuSeries
from .gpu_series_point import GpuSeriesPoint
from .gpu_stats import GpuStats
from .instance_type_spec import InstanceTypeSpec
from .interruption import Interruption
from .job import Job
from .job_allocation import JobAllocation
from .job_batch import JobBatch
from .job_batch_item import JobBatchItem
from .job_batch_result import JobBatchResult
from .job_create import JobCreate
from .job_create_environment import JobCreateEnvironment
from .job_created import JobCreated
from .job_environment import JobEnvironment
from .job_gpu_samples import JobGpuSamples
from .job_keepalive import JobKeepalive
from .job_list import JobList
from .job_priority import JobPriority
from .job_report import JobReport
from .job_signal import JobSignal
from .job_signal_queued import JobSignalQueued
from .job_spec import JobSpec
from .job_state import JobState
from .job_stats import JobStats
from .job_update import JobUpdate
from .job_will_run import JobWillRun
from .launch_fault import LaunchFault
from .local_options import LocalOptions
from .market import Market
from .membership import Membership
from .membership_set import MembershipSet
from .node import Node
from .node_bootstrap_create import NodeBootstrapCreate
from .node_bootstrap_created import NodeBootstrapCreated
from .node_drain import NodeDrain
from .node_join import NodeJoin
from .node_joined import NodeJoined
from .node_list import NodeList
from .node_power import NodePower
from .node_register import NodeRegister
from .node_state import NodeState
from .node_update import NodeUpdate
from .oidc_login import OidcLogin
from .oidc_login_list import OidcLoginList
from .open_mode import OpenMode
from .output_chunk import OutputChunk
from .output_stream import OutputStream
from .partition import Partition
from .partition_list import PartitionList
from .partition_spec import PartitionSpec
from .pool import Pool
from .pool_cooldown import PoolCooldown
from .pool_list import PoolList
from .pool_node import PoolNode
from .pool_nodes_by_state import PoolNodesByState
from .pool_spec import PoolSpec
from .pool_spec_tags import PoolSpecTags
from .power_action import PowerAction
from .preempt_mode import PreemptMode
from .priority_factors import PriorityFactors
from .problem import Problem
from .provider_kind import ProviderKind
from .pty_applied import PtyApplied
from .pty_input import PtyInput
from .qos import Qos
from .qos_spec import QosSpec
from .queue_job import QueueJob
from .queue_list import QueueList
from .rejected_report import RejectedReport
from .report_kind import ReportKind
from .report_source import ReportSource
from .reservation import Reservation
from .reservation_create import ReservationCreate
from .reservation_flag import ReservationFlag
from .reservation_list import ReservationList
from .reservation_node import ReservationNode
from .reservation_update import ReservationUpdate
from .run_limit import RunLimit
from .running_job import RunningJob
from .running_task import RunningTask
from .signal_delivery import SignalDelivery
from .signal_target import SignalTarget
from .signalled_run import SignalledRun
from .step import Step
from .step_create import StepCreate
from .step_create_environment import StepCreateEnvironment
from .step_input import StepInput
from .step_list import StepList
from .step_output import StepOutput
from .step_output_chunk import StepOutputChunk
from .step_output_upload import StepOutputUpload
from .step_state import StepState
from .step_task import StepTask
from .step_task_key import StepTaskKey
from .step_task_launch import StepTaskLaunch
from .step_task_launch_environment import StepTaskLaunchEnvironment
from .step_task_report import StepTaskReport
from .sync_request import SyncRequest
from .sync_response import SyncResponse
from .token_scope import TokenScope
from .tres import Tres
from .tres_gpu_models import TresGpuModels
from .tres_limits import TresLimits
from .usage_report import UsageReport
from .usage_report_row import UsageReportRow
from .usage_report_row_tres import UsageReportRowTres
from .usage_report_total import UsageReportTotal
from .user import User
from .user_create import UserCreate
from .user_list import UserList
from .user_role import UserRole
from .warning_signal import WarningSignal
from .webhook import Webhook
from .webhook_attempt import WebhookAttempt
from .webhook_create import WebhookCreate
from .webhook_delivery import WebhookDelivery
from .webhook_delivery_list import WebhookDeliveryList
from .webhook_list import WebhookList
from .webhook_update import WebhookUpdate
from .whoami import Whoami

__all__ = (
    "Account",
    "AccountCreate",
    "AccountList",
    "AccountUpdate",
    "AcctJob",
    "AcctJobList",
    "AcctStep",
    "ApiToken",
    "ApiTokenCreate",
    "ApiTokenCreated",
    "ApiTokenList",
    "Assignment",
    "AssignmentEnvironment",
    "AssignmentSlurmVariables",
    "AuditEntry",
    "AuditList",
    "Cancellation",
    "CloudEvent",
    "CloudEventData",
    "ClusterInfo",
    "ClusterTimeline",
    "ClusterTimelinePoint",
    "ClusterUsage",
    "ClusterUsageRow",
    "ConsoleToken",
    "Ec2Options",
    "EventList",
    "FairshareList",
    "FairshareRow",
    "Gpu",
    "GpuFault",
    "GpuFaultKind",
    "GpuInfo",
    "GpuKind",
    "GpuSample",
    "GpuSeries",
    "GpuSeriesPoint",
    "GpuStats",
    "InstanceTypeSpec",
    "Interruption",
    "Job",
    "JobAllocation",
    "JobBatch",
    "JobBatchItem",
    "JobBatchResult",
    "JobCreate",
    "JobCreated",
    "JobCreateEnvironment",
    "JobEnvironment",
    "JobGpuSamples",
    "JobKeepalive",
    "JobList",
    "JobPriority",
    "JobReport",
    "JobSignal",
    "JobSignalQueued",
    "JobSpec",
    "JobState",
    "JobStats",
    "JobUpdate",
    "JobWillRun",
    "LaunchFault",
    "LocalOptions",
    "Market",
    "Membership",
    "MembershipSet",
    "Node",
    "NodeBootstrapCreate",
    "NodeBootstrapCreated",
    "NodeDrain",
    "NodeJoin",
    "NodeJoined",
    "NodeList",
    "NodePower",
    "NodeRegister",
    "NodeState",
    "NodeUpdate",
    "OidcLogin",
    "OidcLoginList",
    "OpenMode",
    "OutputChunk",
    "OutputStream",
    "Partition",
    "PartitionList",
    "PartitionSpec",
    "Pool",
    "PoolCooldown",
    "PoolList",
    "PoolNode",
    "PoolNodesByState",
    "PoolSpec",
    "PoolSpecTags",
    "PowerAction",
    "PreemptMode",
    "PriorityFactors",
    "Problem",
    "ProviderKind",
    "PtyApplied",
    "PtyInput",
    "Qos",
    "QosSpec",
    "QueueJob",
    "QueueList",
    "RejectedReport",
    "ReportKind",
    "ReportSource",
    "Reservation",
    "ReservationCreate",
    "ReservationFlag",
    "ReservationList",
    "ReservationNode",
    "ReservationUpdate",
    "RunLimit",
    "RunningJob",
    "RunningTask",
    "SignalDelivery",
    "SignalledRun",
    "SignalTarget",
    "Step",
    "StepCreate",
    "StepCreateEnvironment",
    "StepInput",
    "StepList",
    "StepOutput",
    "StepOutputChunk",
    "StepOutputUpload",
    "StepState",
    "StepTask",
    "StepTaskKey",
    "StepTaskLaunch",
    "StepTaskLaunchEnvironment",
    "StepTaskReport",
    "SyncRequest",
    "SyncResponse",
    "TokenScope",
    "Tres",
    "TresGpuModels",
    "TresLimits",
    "UsageReport",
    "UsageReportRow",
    "UsageReportRowTres",
    "UsageReportTotal",
    "User",
    "UserCreate",
    "UserList",
    "UserRole",
    "WarningSignal",
    "Webhook",
    "WebhookAttempt",
    "WebhookCreate",
    "WebhookDelivery",
    "WebhookDeliveryList",
    "WebhookList",
    "WebhookUpdate",
    "Whoami",
)
