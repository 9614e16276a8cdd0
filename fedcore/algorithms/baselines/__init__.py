"""The baselines [MUFC] and [FeCA] compare with: k-FED ([KFED]), DC-k-means ([DCKM]), Match
Averaging ([MAvg]) and FFCM ([FFCM])."""
from .dckmeans import (DCKMCenters, DCKMClient, DCKMeans, DCKMFit, DCKMRemoval, DCKMRemove,
                       DCKMResult, DCKMServer)
from .ffcm import (FFCM, FFCMClient, FFCMGlobalCenters, FFCMInitialCenters, FFCMLocalCenters,
                   FFCMResult, FFCMServer, FFCMSetup, fcm_statistics, ffcm, fuzzy_c_means)
from .kfed import KFed, KFedResult, KFedServer, farthest_point_init, kfed
from .match_averaging import (MatchAveraging, MatchAveragingResult, MatchAveragingServer,
                              match_average_centers, match_averaging)

__all__ = ["DCKMeans", "FFCM", "FFCMResult", "KFed", "KFedResult", "MatchAveraging",
           "MatchAveragingResult", "farthest_point_init", "fcm_statistics", "ffcm",
           "fuzzy_c_means", "kfed", "match_average_centers", "match_averaging", "KFedServer",
           "MatchAveragingServer", "FFCMServer", "FFCMClient", "FFCMSetup", "FFCMInitialCenters",
           "FFCMGlobalCenters", "FFCMLocalCenters", "DCKMServer", "DCKMClient", "DCKMResult",
           "DCKMRemoval", "DCKMFit", "DCKMRemove", "DCKMCenters"]
