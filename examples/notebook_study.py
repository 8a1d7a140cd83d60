# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # ARK vs ECMP on a 16-GPU leaf-spine, in a notebook
#
# Open with `jupytext --to notebook examples/notebook_study.py` (or run it as a script).
# Every call takes plain dicts and returns pandas DataFrames or a `Result`, which a notebook
# shows as its summary table.

# %%
import fabricsim

sc = fabricsim.load_scenario("ark").with_overrides({"workload.requests": 200})
res = fabricsim.run(sc)
res  # noqa: B018 - a notebook shows the summary table (Result._repr_html_)

# %% [markdown]
# ## A paired study: the same requests under ECMP and ARK, at two request rates
# `delta_pct` is ARK's change against ECMP per paired seed (the geometric mean of the ARK/ECMP
# ratios), with its 95 % confidence interval over the seeds and whether it is `significant`.

# %%
table = fabricsim.study(sc, {"lb.policy": ["ecmp", "ark"]}, grid={"workload.qps": [5, 25]}, seeds=3)
fct = table[(table["metric"] == "fct_mean_s") & (table["value"] == "ark")]
fct[["workload.qps", "mean", "delta_pct", "delta_ci_low", "delta_ci_high"]]

# %% [markdown]
# ## A sweep: the ECMP collision example with fewer and more spines

# %%
sweep = fabricsim.sweep("ecmp-collision", {"topology.spines": [4, 8, 16]}, seeds=2)
sweep.groupby("topology.spines")["step_efficiency"].mean()
